package core

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// kube-apiserver v1.36's warnings (pkg/api/pod/warnings.go) as it sent them for these
// objects, in its order.

const warnedPod = `
metadata:
  name: pw-pod1
  namespace: d1
  annotations:
    scheduler.alpha.kubernetes.io/critical-pod: ""
    seccomp.security.alpha.kubernetes.io/pod: runtime/default
spec:
  terminationGracePeriodSeconds: -5
  nodeSelector: {beta.kubernetes.io/arch: amd64}
  hostAliases: [{ip: 1.2.3.4, hostnames: [a]}, {ip: 1.2.3.4, hostnames: [b]}]
  imagePullSecrets: [{name: a}, {name: a}]
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference: {matchExpressions: [{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: ["a b"]}]}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: beta.kubernetes.io/os, whenUnsatisfiable: DoNotSchedule}
  volumes:
  - name: c
    configMap: {name: cm, items: [{key: a, path: x}, {key: b, path: x/y}]}
  - name: p
    projected: {sources: [{secret: {name: s, items: [{key: a, path: t}]}}, {serviceAccountToken: {path: t}}]}
  - name: e
    ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1500m}}}}}
  containers:
  - name: c
    image: busybox
    env: [{name: A, value: "1"}, {name: A, value: "2"}, {name: B, value: "1"}, {name: B, value: "$(B)x"}]
    resources:
      limits: {memory: 1500m}
      requests: {memory: 1500m}
    ports: [{containerPort: 80, name: http}, {containerPort: 80}, {containerPort: 81, hostIP: 1.2.3.4}, {containerPort: 82, name: web}]
`

func TestPodWarningsAsKubernetes(t *testing.T) {
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict([]byte(warnedPod), &pod); err != nil {
		t.Fatal(err)
	}
	PodRules.Default(&pod)
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("terminationGracePeriodSeconds -5 defaulted to %v, want 1 as kube's conversion", g)
	}
	if errs := PodRules.Validate(&pod); len(errs) != 0 {
		t.Errorf("kube accepts the pod; got %v", errs)
	}
	want := []string{
		`spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use "kubernetes.io/arch" instead`,
		`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
		`spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: a b is invalid, a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		`spec.topologySpreadConstraints[0].topologyKey: beta.kubernetes.io/os is deprecated since v1.14; use "kubernetes.io/os" instead`,
		`spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod`,
		`metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
		`spec.volumes[2].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		`volume "c" (ConfigMap "cm"): overlapping paths: "x/y" with "x"`,
		`volume "p" (Projected): overlapping paths: "t" (ServiceAccountToken) with "t" (Secret "s")`,
		`spec.hostAliases[1].ip: duplicate ip "1.2.3.4"`,
		`spec.imagePullSecrets[1].name: duplicate name "a"`,
		`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the "seccompProfile" field instead`,
		`spec.containers[0].resources.limits[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.containers[0].resources.requests[memory]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.containers[0].env[1]: hides previous definition of "A", which may be dropped when using apply`,
		`spec.containers[0].ports[1]: duplicate port definition with spec.containers[0].ports[0]`,
		`spec.containers[0].ports[2]: hostIP set without hostPort: {Name: HostPort:0 ContainerPort:81 Protocol:TCP HostIP:1.2.3.4}`,
		`spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: a null labelSelector results in matching no pod`,
	}
	if got := PodRules.Warnings(&pod, nil); !slices.Equal(got, want) {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
	pod.Name = "pw.pod"
	if got := PodRules.Warnings(&pod, nil); len(got) == 0 || got[0] != `metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]` {
		t.Errorf("a dotted name: warnings %q", got)
	}
}

func TestPodTemplateWarningsAsKubernetes(t *testing.T) {
	tmpl := &corev1.PodTemplate{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: new(int64(-5)),
		ImagePullSecrets:              []corev1.LocalObjectReference{{}},
		Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
	}}}
	tmpl.Name, tmpl.Namespace = "pw-tmpl", "d1"
	PodTemplateRules.Default(tmpl)
	if errs := PodTemplateRules.Validate(tmpl); len(errs) != 0 {
		t.Errorf("kube accepts a negative grace period in a template; got %v", errs)
	}
	want := []string{
		`template.spec.imagePullSecrets[0].name: invalid empty name ""`,
		`template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
	}
	if got := PodTemplateRules.Warnings(tmpl, nil); !slices.Equal(got, want) {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
}

// kube-apiserver v1.36's warnings on a claim (GetWarningsForPersistentVolumeClaim) and a
// TLS secret without a matching key pair (warningsForSecret).
func TestClaimAndSecretWarningsAsKubernetes(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1500m")}}}}
	pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "x"}
	want := []string{
		`metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead`,
		`spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
	}
	if got := PersistentVolumeClaimRules.Warnings(pvc, nil); !slices.Equal(got, want) {
		t.Errorf("claim warnings\n%q\nwant\n%q", got, want)
	}
	secret := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: nil, corev1.TLSPrivateKeyKey: nil}}
	if got, want := SecretRules.Warnings(secret, nil), []string{"tls: failed to find any PEM data in certificate input"}; !slices.Equal(got, want) {
		t.Errorf("secret warnings %q, want %q", got, want)
	}
}

// kube warns of a ServiceAccount's deprecated enforce-mountable-secrets annotation when a
// write sets it, not when the old object had it already.
func TestServiceAccountWarningsAsKubernetes(t *testing.T) {
	plain := &corev1.ServiceAccount{}
	annotated := &corev1.ServiceAccount{}
	annotated.Annotations = map[string]string{"kubernetes.io/enforce-mountable-secrets": "true"}
	want := []string{"metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets"}
	if got := ServiceAccountRules.Warnings(annotated, nil); !slices.Equal(got, want) {
		t.Errorf("create: %q, want %q", got, want)
	}
	if got := ServiceAccountRules.Warnings(annotated, plain); !slices.Equal(got, want) {
		t.Errorf("an update setting it: %q, want %q", got, want)
	}
	if got := ServiceAccountRules.Warnings(annotated, annotated.DeepCopy()); len(got) != 0 {
		t.Errorf("an update keeping it warned of %q", got)
	}
	if got := ServiceAccountRules.Warnings(plain, nil); len(got) != 0 {
		t.Errorf("a plain ServiceAccount warned of %q", got)
	}
}
