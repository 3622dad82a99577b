package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A write through a pod's status is checked as kube-apiserver v1.36.3 checks it
// (ValidatePodStatusUpdate): its answers to the same patches, by the real kubectl, in its
// words and order. A kubelet's status that drops the QoS class or observed generations
// keeps the stored ones.
func TestPodStatusUpdateValidation(t *testing.T) {
	rules, ok := PodRules.SubresourceUpdates["status"]
	if !ok {
		t.Fatal("Pod has no status rules")
	}
	terminated := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "p1", Image: "busybox"}}}}
	if errs := registrytest.CreateSteps(PodRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	for name, tc := range map[string]struct {
		old, set func(*corev1.Pod)
		want     []string
	}{
		"addresses, node and class": {set: func(p *corev1.Pod) {
			p.Status.PodIPs, p.Status.NominatedNodeName, p.Status.QOSClass = []corev1.PodIP{{IP: "bad"}}, "Bad_Name", "Weird"
		}, want: []string{
			`status.nominatedNodeName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`status.qosClass: Invalid value: "Weird": field is immutable`,
			`status.podIPs[0]: Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
		}},
		"nominated once bound": {old: func(p *corev1.Pod) { p.Spec.NodeName = "n1" }, set: func(p *corev1.Pod) { p.Status.NominatedNodeName = "n2" },
			want: []string{"status.nominatedNodeName: Forbidden: may not be set on pods that are already bound to a node"}},
		"conditions and generation": {set: func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: "Maybe", ObservedGeneration: -1}, {Type: "bad type!", Status: corev1.ConditionTrue}}
			p.Status.ObservedGeneration = -2
		}, want: []string{
			"status.conditions[0].observedGeneration: Invalid value: -1: must be a non-negative integer",
			`status.conditions[1].Type: Invalid value: "bad type!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			"status.observedGeneration: Invalid value: -2: must be a non-negative integer",
		}},
		"two addresses of one family": {set: func(p *corev1.Pod) {
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
			p.Status.HostIP, p.Status.HostIPs = "10.0.0.3", []corev1.HostIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
		}, want: []string{
			`status.podIPs: Invalid value: [{"IP":"10.0.0.1"},{"IP":"10.0.0.2"}]: may specify no more than one IP for each IP family`,
			"status.hostIPs[0].ip: Invalid value: \"10.0.0.1\": must be equal to `hostIP`",
			`status.hostIPs: Invalid value: [{"IP":"10.0.0.1"},{"IP":"10.0.0.2"}]: may specify no more than one IP for each IP family`,
		}},
		"user and device health": {set: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "p1",
				User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: -1, GID: -2, SupplementalGroups: []int64{-3}}},
				AllocatedResourcesStatus: []corev1.ResourceStatus{{Name: "example.com/gpu", Resources: []corev1.ResourceHealth{
					{ResourceID: "a", Health: "Bad", Message: ptr.To("")}, {ResourceID: "a", Health: corev1.ResourceHealthStatusHealthy}}}}}}
		}, want: []string{
			"status.containerStatuses[0].user.linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
			"status.containerStatuses[0].user.linux.gid: Invalid value: -2: must be between 0 and 2147483647, inclusive",
			"status.containerStatuses[0].user.linux.supplementalGroups[0]: Invalid value: -3: must be between 0 and 2147483647, inclusive",
			`status.containerStatuses[0].allocatedResourcesStatus[0].name: Invalid value: "example.com/gpu": must match one of the container's resource requests`,
			`status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].health: Unsupported value: "Bad": supported values: "Healthy", "Unhealthy", "Unknown"`,
			"status.containerStatuses[0].allocatedResourcesStatus[0].resources[0].message: Required value: must be non-empty if specified",
			`status.containerStatuses[0].allocatedResourcesStatus[0].resources[1].resourceID: Duplicate value: "a"`,
		}},
		"claims": {set: func(p *corev1.Pod) {
			p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "x", ResourceClaimName: ptr.To("Bad_")}, {Name: "x"}}
			p.Status.ExtendedResourceClaimStatus = &corev1.PodExtendedResourceClaimStatus{}
		}, want: []string{
			"status.resourceClaimStatuses[0].name: Invalid value: \"x\": must match the name of an entry in `spec.resourceClaims`",
			`status.resourceClaimStatuses[0].resourceClaimName: Invalid value: "Bad_": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"status.resourceClaimStatuses[1].name: Invalid value: \"x\": must match the name of an entry in `spec.resourceClaims`",
			`status.resourceClaimStatuses[1].name: Duplicate value: "x"`,
			"status.extendedResourceClaimStatus.requestMappings: Required value: at least one request mapping is required",
			"status.extendedResourceClaimStatus.resourceClaimName: Required value",
		}},
		"a container that stays terminated": {old: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "p1", State: terminated(1)}}
			p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "dbg", State: terminated(0)}}
		}, set: func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State, p.Status.EphemeralContainerStatuses[0].State = running, running
		}, want: []string{
			"status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
			"status.ephemeralContainerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
		}},
		"a container that restarts on failure": {old: func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "p1", State: terminated(1)}}
		}, set: func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State = running }},
	} {
		o := old.DeepCopy()
		if tc.old != nil {
			tc.old(o)
		}
		p := o.DeepCopy()
		tc.set(p)
		registrytest.ExpectMessages(t, name, rules.Validate(p, o), tc.want...)
	}

	// a kubelet that leaves out the class and generations keeps the stored ones
	o := old.DeepCopy()
	o.Status.ObservedGeneration = 1
	o.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, ObservedGeneration: 1}}
	p := o.DeepCopy()
	p.Status.QOSClass, p.Status.ObservedGeneration, p.Status.Conditions[0].ObservedGeneration = "", 0, 0
	rules.Prepare(p, o)
	if p.Status.QOSClass != corev1.PodQOSBestEffort || p.Status.ObservedGeneration != 1 || p.Status.Conditions[0].ObservedGeneration != 1 {
		t.Errorf("class and generations not kept: %q %d %d", p.Status.QOSClass, p.Status.ObservedGeneration, p.Status.Conditions[0].ObservedGeneration)
	}
}
