package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodSchedulingGates: as kube-apiserver, a pod created with scheduling gates gets
// PodScheduled=False (SchedulingGated), its gates may only be removed (a new one is refused
// with kube's wording), and while it is gated its nodeSelector and required node affinity
// may gain terms but not lose or change them; once ungated they are immutable again.
func TestPodSchedulingGates(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated"},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/foo"}, {Name: "example.com/bar"}},
			NodeSelector:    map[string]string{"disk": "ssd"},
			Containers:      []corev1.Container{{Name: "c", Image: "busybox"}}}}
	got, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As kube's ValidatePodCreate: a pod cannot be created on a node while gated.
	bound := pod.DeepCopy()
	bound.Name, bound.Spec.NodeName = "gated-bound", "node-1"
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), `Pod "gated-bound" is invalid: spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared`) {
		t.Errorf("gated pod created with a nodeName: %v", err)
	}
	var cond *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.PodScheduled {
			cond = &got.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonSchedulingGated ||
		cond.Message != "Scheduling is blocked due to non-empty scheduling gates" {
		t.Errorf("created gated pod's PodScheduled condition = %+v, want False SchedulingGated", cond)
	}
	patch := func(p string) error {
		_, err := pods.Patch(ctx, "gated", types.JSONPatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	refused := func(step, p, want string) {
		t.Helper()
		err := patch(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one containing %q", step, err, want)
		}
	}
	allowed := func(step, p string) {
		t.Helper()
		if err := patch(p); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	refused("gate added", `[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"example.com/new"}}]`,
		`Pod "gated" is invalid: spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/new'`)
	allowed("nodeSelector added to while gated", `[{"op":"add","path":"/spec/nodeSelector/zone","value":"a"}]`)
	refused("nodeSelector changed while gated", `[{"op":"replace","path":"/spec/nodeSelector/disk","value":"hdd"}]`,
		"spec.nodeSelector: Invalid value: ")
	refused("nodeSelector changed while gated", `[{"op":"replace","path":"/spec/nodeSelector/disk","value":"hdd"}]`,
		"only additions to spec.nodeSelector are allowed (no mutations or deletions)")
	allowed("node affinity set while gated", `[{"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]}]}}}}]`)
	allowed("node affinity term gains a requirement while gated", `[{"op":"add","path":"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/-","value":{"key":"b","operator":"Exists"}}]`)
	refused("node affinity term added while gated", `[{"op":"add","path":"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/-","value":{"matchExpressions":[{"key":"c","operator":"Exists"}]}}]`,
		"no additions/deletions to non-empty NodeSelectorTerms list are allowed")
	refused("node affinity requirement removed while gated", `[{"op":"remove","path":"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0"}]`,
		"only additions are allowed (no mutations or deletions)")
	allowed("a gate removed", `[{"op":"remove","path":"/spec/schedulingGates/0"}]`)
	allowed("the last gate removed", `[{"op":"remove","path":"/spec/schedulingGates"}]`)
	refused("nodeSelector added to once ungated", `[{"op":"add","path":"/spec/nodeSelector/rack","value":"r1"}]`,
		"pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"+
			"`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")
	refused("nodeSelector added to once ungated (the diff follows, as kube's)", `[{"op":"add","path":"/spec/nodeSelector/rack","value":"r1"}]`,
		`+  "rack": "r1",`)
	got, err = pods.Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.SchedulingGates) != 0 || got.Spec.NodeSelector["zone"] != "a" || got.Spec.NodeSelector["disk"] != "ssd" {
		t.Errorf("after the updates: gates %v, nodeSelector %v", got.Spec.SchedulingGates, got.Spec.NodeSelector)
	}
}

// TestPodTolerationsOnlyAdded: as kube's validateOnlyAddedTolerations, an update may add
// tolerations and change an existing one's tolerationSeconds, but not remove or change one.
func TestPodTolerationsOnlyAdded(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, pods := context.Background(), c.Client.CoreV1().Pods(c.Namespace)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tolerant"},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := func(p string) error {
		_, err := pods.Patch(ctx, "tolerant", types.JSONPatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	const want = `Pod "tolerant" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds`
	if err := patch(`[{"op":"remove","path":"/spec/tolerations/0"}]`); err == nil || err.Error() != want {
		t.Errorf("a toleration removed: %v, want %q", err, want)
	}
	if err := patch(`[{"op":"replace","path":"/spec/tolerations/0/value","value":"w"}]`); err == nil || err.Error() != want {
		t.Errorf("a toleration changed: %v, want %q", err, want)
	}
	if err := patch(`[{"op":"add","path":"/spec/tolerations/-","value":{"key":"x","operator":"Exists","effect":"NoExecute","tolerationSeconds":60}}]`); err != nil {
		t.Errorf("a toleration added: %v", err)
	}
	if err := patch(`[{"op":"replace","path":"/spec/tolerations/1/tolerationSeconds","value":30}]`); err != nil {
		t.Errorf("an existing toleration's tolerationSeconds changed: %v", err)
	}
}
