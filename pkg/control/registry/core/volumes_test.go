package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestClaimRequestUpdates: a bound claim may keep a request below its volume's capacity
// (a claim bound to a bigger volume, whose update to set a finalizer or deletion must pass)
// and shrink a request only while it stays above the capacity.
func TestClaimRequestUpdates(t *testing.T) {
	bound := func(request string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv",
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		}
	}
	for _, tc := range []struct {
		name     string
		old, new string
		ok       bool
	}{
		{"unchanged below capacity", "2Gi", "2Gi", true},
		{"grow", "5Gi", "8Gi", true},
		{"shrink above capacity", "10Gi", "6Gi", true},
		{"shrink to capacity", "10Gi", "5Gi", false},
		{"shrink below capacity", "10Gi", "4Gi", false},
	} {
		old, upd := bound(tc.old), bound(tc.new)
		upd.Finalizers = []string{"kubernetes.io/pvc-protection"}
		errs := PersistentVolumeClaimRules.ValidateUpdate(upd, old)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%s: errors %v, want ok=%v", tc.name, errs, tc.ok)
		}
	}
}

// TestClaimSpecUpdates: what kube-apiserver lets change in a claim's spec, and its refusal
// with the diff of the internal spec it words it with.
func TestClaimSpecUpdates(t *testing.T) {
	pending := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}
	}
	class := func(name string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = &name }
	}
	request := func(q string) func(*corev1.PersistentVolumeClaim) {
		return func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(q)
		}
	}
	for _, tc := range []struct {
		name     string
		old, new func(*corev1.PersistentVolumeClaim)
		want     []string // each error, as kubectl prints it after "is invalid: "
	}{
		{name: "class set on a claim without one (retroactive default)", new: class("standard")},
		{name: "class set to the beta annotation's", old: func(c *corev1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "gold"}
		}, new: class("gold")},
		{name: "class changed", old: class("a"), new: class("b"), want: []string{
			"spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n" +
				"@@ -10,7 +10,7 @@\n   }\n  },\n  \"VolumeName\": \"\",\n- \"StorageClassName\": \"a\",\n+ \"StorageClassName\": \"b\",\n  \"VolumeMode\": null,\n  \"DataSource\": null,\n  \"DataSourceRef\": null,\n"}},
		{name: "pending claim grown", new: request("2Gi"), want: []string{
			"spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n" +
				"@@ -6,7 +6,7 @@\n  \"Resources\": {\n   \"Limits\": null,\n   \"Requests\": {\n-   \"storage\": \"1Gi\"\n+   \"storage\": \"2Gi\"\n   }\n  },\n  \"VolumeName\": \"\",\n"}},
		{name: "volume mode changed", old: func(c *corev1.PersistentVolumeClaim) {
			fs := corev1.PersistentVolumeFilesystem
			c.Spec.VolumeMode = &fs
		}, new: func(c *corev1.PersistentVolumeClaim) {
			block := corev1.PersistentVolumeBlock
			c.Spec.VolumeMode = &block
		}, want: []string{
			"spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n" +
				"@@ -11,7 +11,7 @@\n  },\n  \"VolumeName\": \"\",\n  \"StorageClassName\": null,\n- \"VolumeMode\": \"Filesystem\",\n+ \"VolumeMode\": \"Block\",\n  \"DataSource\": null,\n  \"DataSourceRef\": null,\n  \"VolumeAttributesClassName\": null\n",
			`volumeMode: Invalid value: "Block": field is immutable`}},
		{name: "attributes class removed once applied", old: func(c *corev1.PersistentVolumeClaim) {
			vac := "fast"
			c.Spec.VolumeAttributesClassName, c.Status.CurrentVolumeAttributesClassName = &vac, &vac
			c.Spec.VolumeName, c.Status.Phase = "pv", corev1.ClaimBound
		}, new: func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = nil }, want: []string{
			"spec.volumeAttributesClassName: Forbidden: update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"}},
	} {
		old := pending()
		if tc.old != nil {
			tc.old(old)
		}
		upd := old.DeepCopy()
		upd.ResourceVersion = "2"
		tc.new(upd)
		var got []string
		for _, err := range PersistentVolumeClaimRules.ValidateUpdate(upd, old) {
			got = append(got, err.Error())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: errors\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

// TestPersistentVolumeUpdates: as kube's ValidatePersistentVolumeUpdate, a volume's
// nodeAffinity is immutable once set but for beta topology labels turned GA, its CSI
// controllerExpandSecretRef may be set once, and its volumeAttributesClassName not cleared.
func TestPersistentVolumeUpdates(t *testing.T) {
	affinity := func(key string) *corev1.VolumeNodeAffinity {
		return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}
	}
	old := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", ResourceVersion: "1"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                  corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource:    corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "h"}},
		NodeAffinity:              affinity(corev1.LabelFailureDomainBetaZone),
		VolumeAttributesClassName: ptr.To("gold"),
	}}
	if errs := registrytest.CreateSteps(PersistentVolumeRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	ga := old.DeepCopy()
	ga.Spec.NodeAffinity = affinity(corev1.LabelTopologyZone)
	ga.Spec.CSI.ControllerExpandSecretRef = &corev1.SecretReference{Name: "expand", Namespace: "kube-system"}
	registrytest.ExpectErrors(t, "beta label to GA, expand secret set", registrytest.UpdateSteps(PersistentVolumeRules, ga, old))

	changed := old.DeepCopy()
	changed.Spec.NodeAffinity = affinity("example.com/rack")
	changed.Spec.VolumeAttributesClassName = nil
	changed.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
	errs := registrytest.UpdateSteps(PersistentVolumeRules, changed, old)
	registrytest.ExpectErrors(t, "affinity changed, class cleared, mode changed", errs,
		"nodeAffinity: FieldValueInvalid", "spec.volumeAttributesClassName: FieldValueForbidden", "volumeMode: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "nodeAffinity", "field is immutable, except for updating from beta label to GA")
	registrytest.ExpectMessage(t, errs, "spec.volumeAttributesClassName", "update from non-nil value to nil is forbidden")
}

// A hostPath volume's type defaults to "" (HostPathUnset) as kube's v1 defaults set it,
// so `kubectl describe pv` shows an empty HostPathType, not <none>.
func TestPersistentVolumeHostPathTypeDefaulted(t *testing.T) {
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv"}}}}
	PersistentVolumeRules.Default(pv)
	if typ := pv.Spec.HostPath.Type; typ == nil || *typ != corev1.HostPathUnset {
		t.Errorf("hostPath type %v, want a pointer to \"\"", typ)
	}
}

func TestAccessModeErrorSorted(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{"Bogus"},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	registrytest.ExpectMessage(t, registrytest.CreateSteps(PersistentVolumeClaimRules, pvc), "spec.accessModes",
		`supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`)
}

// A PersistentVolume's hostPath is checked as a pod's: kube's validateHostPathVolumeSource.
func TestPersistentVolumeHostPathValidated(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/../etc",
			Type: ptr.To[corev1.HostPathType]("Bogus")}}}}
	errs := registrytest.CreateSteps(PersistentVolumeRules, pv)
	registrytest.ExpectMessage(t, errs, "spec.hostPath.type", `supported values: "", "BlockDevice", "CharDevice", "Directory"`)
	registrytest.ExpectMessage(t, errs, "spec.hostPath.path", "must not contain '..'")
}

// TestClaimStatusUpdatesAsKube: a claim's status write is checked as kube-apiserver v1.36.3's
// ValidatePersistentVolumeClaimStatusUpdate checks it (RecoverVolumeExpansionFailure is GA):
// quantities, resize statuses and the allocated resources' names, in its words; conditions
// and the modify-volume status are not checked.
func TestClaimStatusUpdatesAsKube(t *testing.T) {
	claim := func() *corev1.PersistentVolumeClaim { // as stored: defaulted
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		PersistentVolumeClaimRules.Default(c)
		return c
	}
	list := func(name corev1.ResourceName, q string) corev1.ResourceList {
		return corev1.ResourceList{name: resource.MustParse(q)}
	}
	resizing := func(name corev1.ResourceName, s corev1.ClaimResourceStatus) map[corev1.ResourceName]corev1.ClaimResourceStatus {
		return map[corev1.ResourceName]corev1.ClaimResourceStatus{name: s}
	}
	statuses := `supported values: "ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"`
	for _, tc := range []struct {
		name   string
		status corev1.PersistentVolumeClaimStatus
		want   []string
	}{
		{"negative capacity", corev1.PersistentVolumeClaimStatus{Capacity: list(corev1.ResourceStorage, "-1Gi")},
			[]string{"status.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity"}},
		{"negative cpu capacity", corev1.PersistentVolumeClaimStatus{Capacity: list(corev1.ResourceCPU, "-2")},
			[]string{"status.capacity[cpu]: Invalid value: -2: must be a valid resource quantity"}},
		{"unknown resize status", corev1.PersistentVolumeClaimStatus{AllocatedResourceStatuses: resizing(corev1.ResourceStorage, "Bogus")},
			[]string{`status.allocatedResourceStatuses: Unsupported value: "storage": ` + statuses}},
		{"resize status of memory", corev1.PersistentVolumeClaimStatus{AllocatedResourceStatuses: resizing(corev1.ResourceMemory, corev1.PersistentVolumeClaimNodeResizePending)},
			[]string{`status.allocatedResourceStatuses: Unsupported value: "memory": supported values: "storage"`}},
		{"resize status of a bad name", corev1.PersistentVolumeClaimStatus{AllocatedResourceStatuses: resizing("Bad Key", "Bogus")},
			[]string{`status.allocatedResourceStatuses: Invalid value: "Bad Key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`status.allocatedResourceStatuses: Unsupported value: "Bad Key": ` + statuses}},
		{"negative allocation", corev1.PersistentVolumeClaimStatus{AllocatedResources: list(corev1.ResourceStorage, "-500m")},
			[]string{"status.allocatedResources[storage]: Invalid value: -1: must be a valid resource quantity"}},
		{"cpu allocated", corev1.PersistentVolumeClaimStatus{AllocatedResources: list(corev1.ResourceCPU, "-1")},
			[]string{`status.allocatedResources: Unsupported value: "cpu": supported values: "storage"`}},
		{"kubernetes.io name allocated", corev1.PersistentVolumeClaimStatus{AllocatedResources: list("kubernetes.io/x", "1")},
			[]string{`status.allocatedResources: Unsupported value: "kubernetes.io/x": supported values: "storage"`}},
		{"negative extended allocation", corev1.PersistentVolumeClaimStatus{AllocatedResources: list("example.com/x", "-1n")},
			[]string{"status.allocatedResources[example.com/x]: Invalid value: -1: must be a valid resource quantity"}},
		{"bound and resizing", corev1.PersistentVolumeClaimStatus{
			Phase: corev1.ClaimBound, Capacity: list(corev1.ResourceStorage, "2Gi"),
			AllocatedResources:        corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi"), "example.com/x": resource.MustParse("1")},
			AllocatedResourceStatuses: resizing(corev1.ResourceStorage, corev1.PersistentVolumeClaimNodeResizePending),
			Conditions:                []corev1.PersistentVolumeClaimCondition{{Type: "Bogus", Status: "Maybe"}},
			ModifyVolumeStatus:        &corev1.ModifyVolumeStatus{Status: "Bogus"}, CurrentVolumeAttributesClassName: ptr.To(""),
		}, nil},
	} {
		old := claim()
		pvc := old.DeepCopy()
		pvc.Status = tc.status
		registrytest.ExpectMessages(t, tc.name, statusSteps(PersistentVolumeClaimRules, pvc, old), tc.want...)
	}
	// Sic: kube's path of the access modes (of the stored spec, which a status write keeps).
	old := claim()
	old.Spec.AccessModes = nil
	registrytest.ExpectMessages(t, "no access modes", statusSteps(PersistentVolumeClaimRules, old.DeepCopy(), old), "Spec.accessModes: Required value")
}
