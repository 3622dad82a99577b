package statefulset

import (
	"context"
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
// taken by a revision of another template, kube's CreateControllerRevision bumps the
// collision count and creates the revision under the next name; status.collisionCount
// records it. The set never takes the other template's revision as its update revision.
func TestRevisionNameCollisionBumpsCollisionCount(t *testing.T) {
	set := webSet()
	set.Spec.Replicas = ptr.To[int32](0)
	owner, err := history.NewStatefulSetOwner(set)
	if err != nil {
		t.Fatal(err)
	}
	squatter := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-" + owner.Hash, Namespace: "ns"},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}, Revision: 1}
	c, client := controllerWith(set, nil, []*appsv1.ControllerRevision{squatter})
	if _, err := c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	got, err := client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(got.Status.CollisionCount, 0) != 1 || got.Status.UpdateRevision == squatter.Name || got.Status.UpdateRevision == "" {
		t.Errorf("collisionCount %d, updateRevision %q; want 1 and a revision other than %s", ptr.Deref(got.Status.CollisionCount, 0), got.Status.UpdateRevision, squatter.Name)
	}
	rev, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), got.Status.UpdateRevision, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the update revision: %v", err)
	}
	// Labelled with its hash as kube's history package labels a StatefulSet's revisions
	// (a DaemonSet's carry controller-revision-hash).
	if hash := strings.TrimPrefix(rev.Name, "web-"); rev.Labels["controller.kubernetes.io/hash"] != hash || rev.Labels["controller-revision-hash"] != "" {
		t.Errorf("revision %s labelled %v, want controller.kubernetes.io/hash=%s alone", rev.Name, rev.Labels, hash)
	}
}

// TestOrphanedPodsAreAdopted: a StatefulSet deleted with --cascade=orphan and made again
// takes its pods back, as kube's ClaimPods: an orphan named as one of its members and
// matched by its selector gets the set as controller (and counts in its status) instead of
// a create of the same name that fails forever.
func TestOrphanedPodsAreAdopted(t *testing.T) {
	set := webSet()
	member := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "p0",
		Labels: map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-0"}}}
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "webserver", Namespace: "ns", UID: "p1", Labels: map[string]string{"app": "web"}}}
	c, client := controllerWith(set, []*corev1.Pod{member, stranger}, nil)
	if _, err := c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod  string
		want bool
	}{{"web-0", true}, {"webserver", false}} {
		pod, err := client.CoreV1().Pods("ns").Get(context.Background(), tc.pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if adopted := metav1.IsControlledBy(pod, set); adopted != tc.want {
			t.Errorf("pod %s adopted %v, want %v", tc.pod, adopted, tc.want)
		}
	}
	got, err := client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Replicas != 1 {
		t.Errorf("status.replicas %d, want 1 (the adopted pod)", got.Status.Replicas)
	}
}
