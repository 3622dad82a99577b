package apps

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/core"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestDeploymentDefaults(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Status.Replicas = 7
	if errs := registrytest.CreateSteps(DeploymentRules, d); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	s := d.Spec
	quarter := intstr.FromString("25%")
	switch {
	case *s.Replicas != 1, *s.RevisionHistoryLimit != 10, *s.ProgressDeadlineSeconds != 600,
		s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType,
		*s.Strategy.RollingUpdate.MaxSurge != quarter, *s.Strategy.RollingUpdate.MaxUnavailable != quarter:
		t.Errorf("deployment spec not defaulted as Kubernetes does: %+v", s)
	}
	c := s.Template.Spec
	if c.RestartPolicy != corev1.RestartPolicyAlways || c.DNSPolicy != corev1.DNSClusterFirst || *c.TerminationGracePeriodSeconds != 30 ||
		c.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent || c.Priority != nil {
		t.Errorf("pod template not defaulted like a pod (and without a priority): %+v", c)
	}
	if d.Status.Replicas != 0 {
		t.Error("status must be reset on create")
	}
}

func TestDeploymentValidation(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "other"})
	d.Spec.Replicas = registry.Int32Ptr(-1)
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	errs := registrytest.CreateSteps(DeploymentRules, d)
	registrytest.ExpectErrors(t, "bad deployment", errs,
		"spec.replicas: FieldValueInvalid",
		"spec.template.metadata.labels: FieldValueInvalid",
		"spec.template.spec.restartPolicy: FieldValueNotSupported")
	registrytest.ExpectMessage(t, errs, "spec.template.metadata.labels", "`selector` does not match template `labels`")

	d = registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Selector = &metav1.LabelSelector{}
	zero := intstr.FromInt32(0)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}}
	d.Spec.MinReadySeconds = 700
	errs = registrytest.CreateSteps(DeploymentRules, d)
	registrytest.ExpectErrors(t, "empty selector, no room to roll, deadline", errs,
		"spec.selector: FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable: FieldValueInvalid",
		"spec.progressDeadlineSeconds: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.selector", "empty selector is invalid for deployment")

	d = registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	errs = registrytest.CreateSteps(DeploymentRules, d)
	registrytest.ExpectErrors(t, "ephemeral container in the template", errs, "spec.template.spec.ephemeralContainers: FieldValueForbidden")
	registrytest.ExpectMessage(t, errs, "spec.template.spec.ephemeralContainers", "ephemeral containers not allowed in pod template")

	d = registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Labels["bad key"] = "x"
	d.Spec.Template.Annotations = map[string]string{"a/b/c": "x"}
	// As in Kubernetes, a template's own labels and annotations are reported without
	// "metadata" (ValidatePodTemplateSpec), the selector mismatch with it.
	registrytest.ExpectErrorsInOrder(t, "bad template metadata", registrytest.CreateSteps(DeploymentRules, d),
		"spec.template.labels: FieldValueInvalid", "spec.template.annotations: FieldValueInvalid")

	d = registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Selector = nil
	// As in Kubernetes, a missing selector selects nothing, not the template.
	registrytest.ExpectErrors(t, "no selector", registrytest.CreateSteps(DeploymentRules, d), "spec.selector: FieldValueRequired", "spec.template.metadata.labels: FieldValueInvalid")
}

func TestDeploymentSelectorIsImmutable(t *testing.T) {
	old := registrytest.Deployment(map[string]string{"app": "web", "tier": "a"})
	if errs := registrytest.CreateSteps(DeploymentRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	d := old.DeepCopy()
	d.Spec.Selector.MatchLabels["tier"] = "a"
	errs := registrytest.UpdateSteps(DeploymentRules, d, old)
	registrytest.ExpectErrors(t, "changed selector", errs, "spec.selector: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.selector", "field is immutable")
	d = old.DeepCopy()
	d.Spec.Replicas = registry.Int32Ptr(5)
	registrytest.ExpectErrors(t, "scaling", registrytest.UpdateSteps(DeploymentRules, d, old))
}

func TestScaleRules(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Status.Replicas = 2
	DeploymentRules.Scale.SetReplicas(d, 4)
	if spec, status, sel := DeploymentRules.Scale.Replicas(d); spec != 4 || status != 2 || sel != "app=web" {
		t.Errorf("deployment scale: %d %d %q", spec, status, sel)
	}
	rc := &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"a": "b", "c": "d"}}}
	core.ReplicationControllerRules.Scale.SetReplicas(rc, 3)
	if spec, _, sel := core.ReplicationControllerRules.Scale.Replicas(rc); spec != 3 || sel != "a=b,c=d" {
		t.Errorf("replication controller scale: %d %q", spec, sel)
	}
}

func TestReplicationControllerTakesItsTemplateLabels(t *testing.T) {
	tpl := registrytest.Template(map[string]string{"app": "db"})
	rc := &corev1.ReplicationController{ObjectMeta: registrytest.ObjMeta("db"), Spec: corev1.ReplicationControllerSpec{Template: &tpl}}
	if errs := registrytest.CreateSteps(core.ReplicationControllerRules, rc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if rc.Spec.Selector["app"] != "db" || rc.Labels["app"] != "db" || *rc.Spec.Replicas != 1 {
		t.Errorf("rc not defaulted from its template: %+v %v", rc.Spec.Selector, rc.Labels)
	}
	rc.Spec.Template = nil
	registrytest.ExpectErrors(t, "rc without a template", core.ReplicationControllerRules.Validate(rc), "spec.template: FieldValueRequired")
}

func TestReplicaSetValidation(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: registrytest.ObjMeta("rs"), Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: registrytest.Template(map[string]string{"app": "x"}),
	}}
	rs.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64)
	// A deadline of 0 is also out of the pod spec's range, as kube reports too.
	registrytest.ExpectErrors(t, "replica set with a deadline", registrytest.CreateSteps(ReplicaSetRules, rs),
		"spec.template.spec.activeDeadlineSeconds: FieldValueForbidden", "spec.template.spec.activeDeadlineSeconds: FieldValueInvalid")
}

func TestStatefulSetRules(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{
		ServiceName: "db",
		Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template:    registrytest.Template(map[string]string{"app": "db"}),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
	}}
	// The template mounts the claim template's volume, which only the pods get, and its
	// hostname and subdomain are the controller's to set: kube validates the template
	// with those volumes added and those names cleared.
	s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	s.Spec.Template.Spec.Hostname, s.Spec.Template.Spec.Subdomain = "Not_A_Label", "Not_A_Label"
	if errs := registrytest.CreateSteps(StatefulSetRules, s); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if s.Spec.Template.Spec.Volumes != nil || s.Spec.Template.Spec.Hostname != "Not_A_Label" {
		t.Errorf("validation changed the template: %+v", s.Spec.Template.Spec)
	}
	missing := s.DeepCopy()
	missing.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}
	registrytest.ExpectErrors(t, "a mount of no volume", registrytest.CreateSteps(StatefulSetRules, missing), "spec.template.spec.containers[0].volumeMounts[0].name: FieldValueNotFound")
	spec := s.Spec
	if spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || *spec.Replicas != 1 || *spec.UpdateStrategy.RollingUpdate.Partition != 0 ||
		spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*spec.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("statefulset not defaulted: %+v", spec)
	}
	// A claim template is defaulted as a claim, and always reads as a v1 claim, as kube's
	// apps/v1 conversion has it; one stored before that may still be updated.
	if c := spec.VolumeClaimTemplates[0]; c.Status.Phase != corev1.ClaimPending || c.APIVersion != "v1" || c.Kind != "PersistentVolumeClaim" {
		t.Errorf("claim template not defaulted: %+v", c)
	}
	storedBefore := s.DeepCopy()
	storedBefore.Spec.VolumeClaimTemplates[0].TypeMeta = metav1.TypeMeta{}
	storedBefore.Spec.VolumeClaimTemplates[0].Status = corev1.PersistentVolumeClaimStatus{}
	registrytest.ExpectErrors(t, "an update of a StatefulSet stored without claim template defaults", registrytest.UpdateSteps(StatefulSetRules, s.DeepCopy(), storedBefore))
	scaled := s.DeepCopy()
	scaled.Spec.Replicas = registry.Int32Ptr(3)
	scaled.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	registrytest.ExpectErrors(t, "scale and new image", registrytest.UpdateSteps(StatefulSetRules, scaled, s))
	renamed := s.DeepCopy()
	renamed.Spec.ServiceName = "other"
	errs := registrytest.UpdateSteps(StatefulSetRules, renamed, s)
	registrytest.ExpectErrors(t, "new service name", errs, "spec: FieldValueForbidden")
}

func TestDaemonSetRules(t *testing.T) {
	d := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("agent"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		Template: registrytest.Template(map[string]string{"app": "agent"}),
	}}
	if errs := registrytest.CreateSteps(DaemonSetRules, d); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	ru := d.Spec.UpdateStrategy.RollingUpdate
	if d.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 {
		t.Errorf("daemonset strategy not defaulted: %+v", d.Spec.UpdateStrategy)
	}
	two := intstr.FromInt32(2)
	ru.MaxSurge = &two
	registrytest.ExpectErrors(t, "surge and unavailable both set", DaemonSetRules.Validate(d), "spec.updateStrategy.rollingUpdate.maxSurge: FieldValueInvalid")
}

// TestStatefulSetUpdateOfStoredInvalid: an update does not check again what kube's
// ValidateStatefulSetUpdate tolerates in a StatefulSet stored before validation got
// stricter: its name, and the pod spec of its template while the stored spec is itself
// invalid (so it can still be scaled, or freed of its finalizers); the template's labels
// and restart policy are still checked, and a valid stored template keeps the new one valid.
func TestStatefulSetUpdateOfStoredInvalid(t *testing.T) {
	valid := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{
		ServiceName: "db",
		Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template:    registrytest.Template(map[string]string{"app": "db"}),
	}}
	if errs := registrytest.CreateSteps(StatefulSetRules, valid); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	stored := valid.DeepCopy()
	stored.Name = "Db"
	stored.Spec.Template.Spec.Containers[0].Image = ""
	scaled := stored.DeepCopy()
	scaled.Spec.Replicas = registry.Int32Ptr(0)
	registrytest.ExpectErrors(t, "scaling a stored invalid statefulset", registrytest.UpdateSteps(StatefulSetRules, scaled, stored))
	imageless := valid.DeepCopy()
	imageless.Spec.Template.Spec.Containers[0].Image = ""
	registrytest.ExpectErrors(t, "a valid template made invalid", registrytest.UpdateSteps(StatefulSetRules, imageless, valid),
		"spec.template.spec.containers[0].image: FieldValueRequired")
	unmatched := stored.DeepCopy()
	unmatched.Spec.Template.Labels = map[string]string{"app": "other"}
	unmatched.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	registrytest.ExpectErrors(t, "a stored invalid template's labels and restart policy", registrytest.UpdateSteps(StatefulSetRules, unmatched, stored),
		"spec.template.metadata.labels: FieldValueInvalid", "spec.template.spec.restartPolicy: FieldValueNotSupported")
}

// TestStatefulSetCreateValidation: what kube's ValidateStatefulSet checks at creation, and
// ValidateStatefulSetUpdate tolerates afterwards as immutable: a name that is a DNS label
// (it names the pods and their hostnames), a serviceName that is one, claim templates that
// are valid claims. rollingUpdate.maxUnavailable is dropped on create, as with kube's
// MaxUnavailableStatefulSet gate off; one already stored must stay a positive count or
// percentage.
func TestStatefulSetCreateValidation(t *testing.T) {
	valid := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{
		ServiceName: "db",
		Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template:    registrytest.Template(map[string]string{"app": "db"}),
	}}
	bad := valid.DeepCopy()
	bad.Name, bad.Spec.ServiceName = "db.v1", "db.v1"
	bad.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	registrytest.ExpectErrors(t, "a dotted name and serviceName, a claim template with no access mode or size", registrytest.CreateSteps(StatefulSetRules, bad),
		"metadata.name: FieldValueInvalid", "spec.serviceName: FieldValueInvalid",
		"spec.volumeClaimTemplates[0].spec.accessModes: FieldValueRequired", "spec.volumeClaimTemplates[0].spec.resources[storage]: FieldValueRequired")
	for v, want := range map[string][]string{
		"0":    {"spec.updateStrategy.rollingUpdate.maxUnavailable: FieldValueInvalid"},
		"0%":   {"spec.updateStrategy.rollingUpdate.maxUnavailable: FieldValueInvalid"},
		"101%": {"spec.updateStrategy.rollingUpdate.maxUnavailable: FieldValueInvalid"},
		"-1":   {"spec.updateStrategy.rollingUpdate.maxUnavailable: FieldValueInvalid"},
		"2":    nil, "50%": nil,
	} {
		s := valid.DeepCopy()
		mu := intstr.Parse(v)
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &mu}}
		stored := s.DeepCopy()
		registrytest.ExpectErrors(t, "create with maxUnavailable "+v, registrytest.CreateSteps(StatefulSetRules, s))
		if s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
			t.Errorf("create with maxUnavailable %s: kept, want dropped", v)
		}
		StatefulSetRules.Default(stored)
		two := intstr.FromInt32(2)
		stored.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &two
		registrytest.ExpectErrors(t, "update dropping a stored maxUnavailable", registrytest.UpdateSteps(StatefulSetRules, s.DeepCopy(), stored))
		changed := stored.DeepCopy()
		changed.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &mu
		registrytest.ExpectErrors(t, "update of a stored maxUnavailable to "+v, registrytest.UpdateSteps(StatefulSetRules, changed, stored), want...)
	}
	if errs := registrytest.CreateSteps(StatefulSetRules, valid); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	stored := bad.DeepCopy()
	stored.Spec.Replicas = registry.Int32Ptr(1)
	StatefulSetRules.Default(stored)
	scaled := stored.DeepCopy()
	scaled.Spec.Replicas = registry.Int32Ptr(3)
	registrytest.ExpectErrors(t, "scaling a statefulset stored with them", registrytest.UpdateSteps(StatefulSetRules, scaled, stored))
}

// TestStatefulSetPolicyAndStrategyWording: an unknown podManagementPolicy or
// updateStrategy type is Invalid, in the words of kube's ValidateStatefulSetSpec (the
// strategy shown as kube's internal struct prints it).
func TestStatefulSetPolicyAndStrategyWording(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("db"), Spec: appsv1.StatefulSetSpec{
		ServiceName:         "db",
		Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template:            registrytest.Template(map[string]string{"app": "db"}),
		PodManagementPolicy: "Sometimes",
		UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: "Never"},
	}}
	partition, unavailable := int32(2), intstr.FromString("50%")
	withRolling := s.DeepCopy()
	withRolling.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition, MaxUnavailable: &unavailable}
	for _, tc := range []struct {
		set      *appsv1.StatefulSet
		strategy string
	}{
		{s, `{"Type":"Never","RollingUpdate":null}`},
		{withRolling, `{"Type":"Never","RollingUpdate":{"Partition":2,"MaxUnavailable":null}}`}, // dropped, as kube does
	} {
		var got []string
		for _, e := range registrytest.CreateSteps(StatefulSetRules, tc.set) {
			got = append(got, e.Error())
		}
		want := []string{
			`spec.podManagementPolicy: Invalid value: "Sometimes": must be 'OrderedReady' or 'Parallel'`,
			`spec.updateStrategy: Invalid value: ` + tc.strategy + `: must be 'RollingUpdate' or 'OnDelete'`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("errors\n%q, want\n%q", got, want)
		}
	}
}

// TestStatefulSetErrorOrder: a StatefulSet wrong everywhere is answered in the order of
// kube's ValidateStatefulSetSpec (checked against kube-apiserver v1.36.3).
func TestStatefulSetErrorOrder(t *testing.T) {
	s := &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("ss"), Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](-1), ServiceName: "Bad_Name", PodManagementPolicy: "Random",
		UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](-1)}},
		PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "Maybe"},
		Ordinals:                             &appsv1.StatefulSetOrdinals{Start: -1},
		Selector:                             &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}},
		Template: registrytest.Template(map[string]string{"a": "c"}),
	}}
	registrytest.ExpectErrorsInOrder(t, "statefulset", registrytest.CreateSteps(StatefulSetRules, s),
		"spec.podManagementPolicy: FieldValueInvalid", "spec.updateStrategy.rollingUpdate.partition: FieldValueInvalid",
		"spec.persistentVolumeClaimRetentionPolicy.whenDeleted: FieldValueNotSupported", "spec.persistentVolumeClaimRetentionPolicy.whenScaled: FieldValueNotSupported",
		"spec.volumeClaimTemplates[0].spec.resources[storage]: FieldValueRequired", "spec.replicas: FieldValueInvalid",
		"spec.ordinals.start: FieldValueInvalid", "spec.serviceName: FieldValueInvalid", "spec.template.metadata.labels: FieldValueInvalid")
}

// TestDaemonSetErrorOrder: the revision history limit comes after the update strategy, as
// in kube's ValidateDaemonSetSpec.
func TestDaemonSetErrorOrder(t *testing.T) {
	zero := intstr.FromInt32(0)
	d := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("ds"), Spec: appsv1.DaemonSetSpec{
		MinReadySeconds: -1, RevisionHistoryLimit: ptr.To[int32](-2),
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &zero, MaxSurge: &zero}},
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: registrytest.Template(map[string]string{"a": "b"}),
	}}
	registrytest.ExpectErrorsInOrder(t, "daemonset", registrytest.CreateSteps(DaemonSetRules, d), "spec.minReadySeconds: FieldValueInvalid",
		"spec.updateStrategy.rollingUpdate.maxUnavailable: FieldValueRequired", "spec.revisionHistoryLimit: FieldValueInvalid")
}

// TestActiveDeadlineForbiddenPerKind: a template with activeDeadlineSeconds is refused in
// the words kube uses for each kind (a Deployment's as its ReplicaSets').
func TestActiveDeadlineForbiddenPerKind(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	tmpl := registrytest.Template(map[string]string{"app": "x"})
	tmpl.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	for _, tc := range []struct {
		errs field.ErrorList
		kind string
	}{
		{registrytest.CreateSteps(ReplicaSetRules, &appsv1.ReplicaSet{ObjectMeta: registrytest.ObjMeta("x"), Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}), "ReplicaSet"},
		{registrytest.CreateSteps(DeploymentRules, &appsv1.Deployment{ObjectMeta: registrytest.ObjMeta("x"), Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}), "ReplicaSet"},
		{registrytest.CreateSteps(DaemonSetRules, &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("x"), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}}), "DaemonSet"},
		{registrytest.CreateSteps(StatefulSetRules, &appsv1.StatefulSet{ObjectMeta: registrytest.ObjMeta("x"), Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl}}), "StatefulSet"},
		{registrytest.CreateSteps(core.ReplicationControllerRules, &corev1.ReplicationController{ObjectMeta: registrytest.ObjMeta("x"), Spec: corev1.ReplicationControllerSpec{Selector: sel.MatchLabels, Template: &tmpl}}), "ReplicationController"},
	} {
		want := "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in " + tc.kind + " is not Supported"
		if len(tc.errs) != 1 || tc.errs[0].Error() != want {
			t.Errorf("errors %v, want [%s]", tc.errs.ToAggregate(), want)
		}
	}
}
