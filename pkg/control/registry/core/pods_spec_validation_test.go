package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const dnsLabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

// TestPodSpecValidation: the pod-level checks of kube's ValidatePodSpec refuse each bad
// field with kube's path and words (pkg/apis/core/validation/validation.go, v1.36).
func TestPodSpecValidation(t *testing.T) {
	vol := func(name string, src corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: src}
	}
	mode := func(m int32) *int32 { return &m }
	seconds := func(s int64) *int64 { return &s }
	cases := []struct {
		name string
		edit func(*corev1.PodSpec)
		want []string
	}{
		{"volume without a name", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})}
		}, []string{"spec.volumes[0].name: Required value"}},
		{"volume name not a DNS label", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("Data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})}
		}, []string{`spec.volumes[0].name: Invalid value: "Data": ` + dnsLabelMsg}},
		{"volume name twice", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
				vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})}
		}, []string{`spec.volumes[1].name: Duplicate value: "data"`}},
		{"two volume sources", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{},
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}, DownwardAPI: &corev1.DownwardAPIVolumeSource{}})}
		}, []string{"spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
			"spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type"}},
		{"hostPath without a path", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("data", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}})}
		}, []string{"spec.volumes[0].hostPath.path: Required value"}},
		{"hostPath with '..' and an unknown type", func(s *corev1.PodSpec) {
			dir := corev1.HostPathType("Dir")
			s.Volumes = []corev1.Volume{vol("data", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/a/../b", Type: &dir}})}
		}, []string{`spec.volumes[0].hostPath.path: Invalid value: "/a/../b": must not contain '..'`,
			`spec.volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`}},
		{"negative emptyDir size", func(s *corev1.PodSpec) {
			limit := resource.MustParse("-1Mi")
			s.Volumes = []corev1.Volume{vol("data", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}})}
		}, []string{"spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity"}},
		{"configMap without a name", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("cfg", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}})}
		}, []string{"spec.volumes[0].configMap.name: Required value"}},
		{"secret items out of the volume, bad modes", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("sec", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: mode(01000),
				Items: []corev1.KeyToPath{{Key: "a", Path: "/etc/a"}, {Key: "b", Path: "..b", Mode: mode(-1)}, {Path: "../c"}}}})}
		}, []string{
			"spec.volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
			`spec.volumes[0].secret.items[0].path: Invalid value: "/etc/a": must be a relative path`,
			`spec.volumes[0].secret.items[1].path: Invalid value: "..b": must not start with '..'`,
			"spec.volumes[0].secret.items[1].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
			"spec.volumes[0].secret.items[2].key: Required value",
			`spec.volumes[0].secret.items[2].path: Invalid value: "../c": must not contain '..'`,
		}},
		{"claim without a name", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("pvc", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}})}
		}, []string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"}},
		{"downwardAPI of a field a volume cannot hold", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "node", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}},
				{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.foo"}},
				{Path: "y"}}}})}
		}, []string{
			`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`,
			`spec.volumes[0].downwardAPI.fieldRef.fieldPath: Invalid value: "metadata.foo": error converting fieldPath: field label not supported: metadata.foo`,
			"spec.volumes[0].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
		}},
		{"downwardAPI resources without a container, unknown, divided wrong", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("info", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
				{Path: "gpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.gpu"}},
				{Path: "m", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu", Divisor: resource.MustParse("3m")}},
				{Path: "hp", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.hugepages-2Mi"}}}}})}
		}, []string{
			"spec.volumes[0].downwardAPI.resourceFieldRef.containerName: Required value",
			`spec.volumes[0].downwardAPI.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
			`spec.volumes[0].downwardAPI.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
		}},
		{"projected token too short, paths twice", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("proj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: seconds(60)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"},
					Items: []corev1.KeyToPath{{Key: "k", Path: "a"}, {Key: "l", Path: "a"}}}}}}})}
		}, []string{
			"spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
			`spec.volumes[0].projected: Invalid value: "c": conflicting duplicate paths`,
		}},
		{"projected secret without a name, configMap on its path", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("proj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{Items: []corev1.KeyToPath{{Key: "k", Path: "x"}, {Key: "l", Path: "/abs"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"},
					Items: []corev1.KeyToPath{{Key: "k", Path: "x"}}}}}}})}
		}, []string{
			"spec.volumes[0].projected.sources[0].secret.name: Required value",
			`spec.volumes[0].projected.sources[0].secret.items[1].path: Invalid value: "/abs": must be a relative path`,
			`spec.volumes[0].projected: Invalid value: "c": conflicting duplicate paths`,
		}},
		{"nfs relative path", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("n", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "srv", Path: "x"}})}
		}, []string{`spec.volumes[0].nfs.path: Invalid value: "x": must be an absolute path`}},
		{"csi without a driver", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("c", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{}})}
		}, []string{"spec.volumes[0].csi.driver: Required value"}},
		{"ephemeral without a template", func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{vol("e", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}})}
		}, []string{"spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"}},
		{"tolerations", func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{
				{Key: "k", Operator: "In"},
				{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"},
				{Operator: corev1.TolerationOpEqual},
				{Key: "k", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: seconds(5)},
				{Key: "k", Operator: corev1.TolerationOpExists, Effect: "Never"},
				{Key: "k", Operator: corev1.TolerationOpLt, Value: "5"},
				{Key: "a b", Operator: corev1.TolerationOpExists},
			}
		}, []string{
			`spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"`,
			"spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
			"spec.tolerations[2].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
			"spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
			`spec.tolerations[4].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
			`spec.tolerations[5].operator: Unsupported value: "Lt": supported values: "Equal", "Exists", "Lt", "Gt"`,
			`spec.tolerations[6].key: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		}},
		{"deadline and ids out of range", func(s *corev1.PodSpec) {
			s.ActiveDeadlineSeconds = seconds(0)
			policy := corev1.PodFSGroupChangePolicy("Sometimes")
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: seconds(-1), SupplementalGroups: []int64{1, -2}, FSGroupChangePolicy: &policy}
		}, []string{
			"spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"spec.securityContext.supplementalGroups[1]: Invalid value: -2: must be between 0 and 2147483647, inclusive",
			`spec.securityContext.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"`,
			"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
		}},
		{"names of the pod's references", func(s *corev1.PodSpec) {
			s.ServiceAccountName = "Web"
			s.PriorityClassName = "High"
			s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}, {Name: "g"}}
			s.HostAliases = []corev1.HostAlias{{IP: "1.2.3", Hostnames: []string{"ok"}}}
		}, []string{
			`spec.schedulingGates[1]: Duplicate value: "g"`,
			`spec.serviceAccountName: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`spec.hostAliases[0].ip: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.priorityClassName: Invalid value: "High": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
	}
	for _, c := range cases {
		if got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default"}, c.edit); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}

	// A volume of no source at all is defaulted to an emptyDir first, so only a direct
	// call meets kube's "must specify a volume type".
	if got := registrytest.Messages(corevalidation.ValidateVolumes([]corev1.Volume{{Name: "v"}}, "", field.NewPath("spec", "volumes"))); !slices.Equal(got,
		[]string{"spec.volumes[0]: Required value: must specify a volume type"}) {
		t.Errorf("a volume of no source: %q", got)
	}
}

// podCreateErrors are the errors of creating a pod of meta with one container, edited.
func podCreateErrors(meta metav1.ObjectMeta, edit func(*corev1.PodSpec)) []string {
	pod := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	edit(&pod.Spec)
	return registrytest.Messages(registrytest.CreateSteps(PodRules, pod))
}

// TestPodSpecValidationAcceptsValidVolumes: every source minilet mounts, well formed,
// passes; so do a workload's and a pod's usual scheduling fields.
func TestPodSpecValidationAcceptsValidVolumes(t *testing.T) {
	dir := corev1.HostPathDirectory
	storage := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{
			{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: &dir}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "dir/k"}}}}},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "team", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['example.com/team']"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}}}}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}}},
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: storage}}}}}},
		},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64)}},
		NodeSelector:   map[string]string{"kubernetes.io/os": "linux"},
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}},
		HostAliases:    []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db.local"}}},
	}}
	if errs := registrytest.CreateSteps(PodRules, pod); len(errs) != 0 {
		t.Errorf("a valid pod refused: %v", errs.ToAggregate())
	}
}

// TestPodTemplateSpecValidation: a workload's template meets the same checks under its
// own path.
func TestPodTemplateSpecValidation(t *testing.T) {
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "In"}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	want := []string{"spec.template.spec.volumes[0].configMap.name: Required value",
		`spec.template.spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"`}
	if got := registrytest.Messages(registrytest.CreateSteps(apps.DeploymentRules, d)); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestPodUpdateOfStoredSpec: an update that leaves the spec as stored (a status report, a
// label, a deletion) passes even if the spec predates a check it fails; one that changes
// the spec meets every check, as kube's ValidatePodUpdate.
func TestPodUpdateOfStoredSpec(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}, NodeName: "node-1",
			Tolerations: []corev1.Toleration{{Key: "k", Operator: "In"}}}}
	PodRules.Default(old)

	status := old.DeepCopy()
	status.Labels = map[string]string{"seen": "yes"}
	status.Status.Phase = corev1.PodRunning
	if errs := registrytest.UpdateSteps(PodRules, status, old); len(errs) != 0 {
		t.Errorf("an update of a stored spec's pod refused: %v", errs.ToAggregate())
	}

	added := old.DeepCopy()
	added.Spec.Tolerations = append(added.Spec.Tolerations, corev1.Toleration{Key: "k2", Operator: corev1.TolerationOpExists, Value: "v"})
	want := []string{`spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"`,
		"spec.tolerations[1].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"}
	if got := registrytest.Messages(registrytest.UpdateSteps(PodRules, added, old)); !slices.Equal(got, want) {
		t.Errorf("a spec update:\n got %q\nwant %q", got, want)
	}
}
