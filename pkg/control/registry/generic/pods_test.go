package generic

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// A binding sets the node, the PodScheduled condition and the binding's annotations in
// one write, and leaves metadata.generation alone (kube-apiserver's BindingREST writes the
// pod directly, not through the pod strategy's update that counts spec changes).
func TestBindAssignsOnce(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	pods := s.resource(t, "pods")
	if _, err := s.Create(ctx, pods, pod("a"), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler nominated a node (preemption); binding clears the hint, as
	// kube-apiserver's does with ClearingNominatedNodeNameAfterBinding (on since 1.35).
	created, err := s.Update(ctx, pods, "default", "a", UpdateOptions{Subresource: "status"}, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod).DeepCopy()
		p.Status.NominatedNodeName = "node-1"
		return p, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.(*corev1.Pod).Status.NominatedNodeName != "node-1" {
		t.Fatal("status.nominatedNodeName was not stored")
	}
	uid := created.(*corev1.Pod).UID
	b := &corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}
	b.UID, b.Annotations = uid, map[string]string{"example.com/placed-by": "test"}

	if err := s.Bind(ctx, pods, "default", "a", b, true); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "a"); got.Spec.NodeName != "" {
		t.Fatalf("a dry-run binding was stored: node %q", got.Spec.NodeName)
	}
	if err := s.Bind(ctx, pods, "default", "a", b, false); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, "a")
	if got.Spec.NodeName != "node-1" || got.Annotations["example.com/placed-by"] != "test" || got.Generation != 1 {
		t.Errorf("bound pod: node %q, annotations %v, generation %d; want node-1, the binding's annotation, 1 (a binding is no spec update: kube's stays 1)",
			got.Spec.NodeName, got.Annotations, got.Generation)
	}
	scheduled := false
	for _, c := range got.Status.Conditions {
		scheduled = scheduled || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero())
	}
	if got.Status.NominatedNodeName != "" {
		t.Errorf("bound pod keeps status.nominatedNodeName %q; kube-apiserver's binding clears it", got.Status.NominatedNodeName)
	}
	if !scheduled || got.ResourceVersion == created.(*corev1.Pod).ResourceVersion {
		t.Errorf("bound pod: conditions %v, resourceVersion %s (created %s)", got.Status.Conditions, got.ResourceVersion, created.(*corev1.Pod).ResourceVersion)
	}

	b2 := func(uid, rv string) *corev1.Binding {
		b := &corev1.Binding{Target: corev1.ObjectReference{Name: "node-2"}}
		b.UID, b.ResourceVersion = types.UID(uid), rv
		return b
	}
	gated := pod("gated")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	if _, err := s.Create(ctx, pods, gated, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pod string
		binding   *corev1.Binding
		want      string
	}{
		{"already bound", "a", &corev1.Binding{Target: corev1.ObjectReference{Name: "node-2"}}, `Operation cannot be fulfilled on pods/binding "a": pod a is already assigned to node "node-1"`},
		// The binding's UID and resourceVersion are preconditions, checked first, as
		// kube-apiserver's storage does.
		{"wrong uid", "a", b2("wrong", ""), `pods "a": StorageError: invalid object, Code: 4, Key: ` + Key(pods, "default", "a") + `, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: wrong`},
		{"stale resourceVersion", "gated", b2("", "1"), "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1"},
		{"gated", "gated", &corev1.Binding{Target: corev1.ObjectReference{Name: "node-2"}}, "non-empty .spec.schedulingGates"},
	} {
		err := s.Bind(ctx, pods, "default", c.pod, c.binding, false)
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a conflict saying %q", c.name, err, c.want)
		}
	}
	if err := s.Bind(ctx, pods, "default", "missing", &corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}, false); !apierrors.IsNotFound(err) {
		t.Errorf("binding a missing pod: %v, want not found", err)
	}
	want := `target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"`
	if err := s.Bind(ctx, pods, "default", "gated", &corev1.Binding{Target: corev1.ObjectReference{Kind: "Pod", Name: "x"}}, false); !apierrors.IsInternalError(err) || err.Error() != want {
		t.Errorf("binding to a Pod: %v, want kube's 500 %q", err, want)
	}
}

func get(t *testing.T, s *Store, name string) *corev1.Pod {
	t.Helper()
	obj, err := s.Get(t.Context(), s.resource(t, "pods"), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Pod)
}
