package daemonset

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/history"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestRevisionNameCollisionBumpsCollisionCount: when the name of the template's revision is
// taken by a revision of another template, kube's snapshot bumps status.collisionCount
// (which renames the revision) and the sync fails to be retried; no pod is labelled with
// the other template's revision.
func TestRevisionNameCollisionBumpsCollisionCount(t *testing.T) {
	ds := agentSet("u1")
	owner, err := history.NewOwner(ds, kind, &ds.Spec.Template, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	squatter := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + owner.Hash, Namespace: "ns"},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}, Revision: 1}
	c, client := controllerWith(ds, nil, []*appsv1.ControllerRevision{squatter})
	if _, err := c.sync(context.Background(), "ns/agent"); err == nil {
		t.Error("sync of a colliding revision name: no error, want one (retry with the new collisionCount)")
	}
	got, err := client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(got.Status.CollisionCount, 0) != 1 {
		t.Errorf("collisionCount %d, want 1", ptr.Deref(got.Status.CollisionCount, 0))
	}
	pods, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods created with the colliding revision's hash, want none", len(pods.Items))
	}
}

// TestOrphanedPodsAreAdopted: a DaemonSet deleted with --cascade=orphan and made again
// takes the orphans its selector matches back, as kube's ClaimPods, instead of starting a
// second daemon pod beside each.
func TestOrphanedPodsAreAdopted(t *testing.T) {
	ds := agentSet("u2")
	owner, err := history.NewOwner(ds, kind, &ds.Spec.Template, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A running pod of the same template, as the DaemonSet before had left it.
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-old", Namespace: "ns", UID: "p0",
		Labels: map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: owner.Hash}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: ds.Spec.Template.Spec.Containers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	c, client := controllerWith(ds, []*corev1.Pod{orphan}, nil)
	if _, err := c.sync(context.Background(), "ns/agent"); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods.Items {
		got = append(got, fmt.Sprintf("%s adopted=%v", p.Name, metav1.IsControlledBy(&p, ds)))
	}
	if strings.Join(got, ", ") != "agent-old adopted=true" {
		t.Errorf("pods %v, want the orphan alone, adopted", got)
	}
}
