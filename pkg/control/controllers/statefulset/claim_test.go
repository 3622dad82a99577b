package statefulset

import (
	"context"
	"errors"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/internal/controller/history"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// webSet is a StatefulSet "web" of one replica selecting app=web.
func webSet() *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u3", Generation: 2},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	set.Spec.Template.Labels = map[string]string{"app": "web"}
	set.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	return set
}

// controllerWith is a Controller whose listers show objs and whose client holds them.
func controllerWith(set *appsv1.StatefulSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision) (*Controller, *fake.Clientset) {
	w := controllertest.NewWorkload([]runtime.Object{set}, pods, revs)
	return &Controller{client: w.Client, recorder: record.NewFakeRecorder(10),
		sets: appslisters.NewStatefulSetLister(controllertest.Indexer(set)), revisions: w.Revisions,
		pods: w.Pods, claims: corelisters.NewPersistentVolumeClaimLister(controllertest.Indexer())}, w.Client
}

// TestCreateOfATakenNameFails: a pod of the member's name that the set may not claim (its
// labels do not match) makes the create fail with AlreadyExists, and the sync fails with
// it to be retried with back-off, as kube's CreateStatefulPod, which records no Event for
// it. The status is written all the same (kube's performUpdate).
func TestCreateOfATakenNameFails(t *testing.T) {
	set := webSet()
	squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "p9", Labels: map[string]string{"app": "other"}}}
	c, client := controllerWith(set, []*corev1.Pod{squatter}, nil)
	if _, err := c.sync(context.Background(), "ns/web"); err == nil {
		t.Error("sync with web-0 taken by another pod: no error, want AlreadyExists (to retry with back-off)")
	}
	got, err := client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 2 || got.Status.UpdateRevision == "" {
		t.Errorf("status %+v, want observedGeneration 2 and the update revision written despite the error", got.Status)
	}
	if events := c.recorder.(*record.FakeRecorder).Events; len(events) != 0 {
		t.Errorf("event %q, want none for AlreadyExists", <-events)
	}
}

// TestPodsNoLongerSelectedAreReleased: a pod of the set relabelled out of its selector is
// released (kube's ClaimPods): its controller reference goes and the set counts it no more.
func TestPodsNoLongerSelectedAreReleased(t *testing.T) {
	set := webSet()
	relabelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns", UID: "p0", Labels: map[string]string{"app": "other"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)}}}
	c, client := controllerWith(set, []*corev1.Pod{relabelled}, nil)
	_, _ = c.sync(context.Background(), "ns/web") // fails: web-0 cannot be made again while the released pod has the name
	pod, err := client.CoreV1().Pods("ns").Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		t.Errorf("relabelled pod still controlled by %s", ref.Name)
	}
	got, err := client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Replicas != 0 {
		t.Errorf("status.replicas %d, want 0 (the pod was released)", got.Status.Replicas)
	}
}

// TestOrphanedRevisionsAreAdopted: the revisions of a set deleted with --cascade=orphan
// are taken back by the set made again (kube's adoptOrphanRevisions): those its selector
// matches get it as controller; one it does not select stays an orphan.
func TestOrphanedRevisionsAreAdopted(t *testing.T) {
	set := webSet()
	set.Spec.Replicas = ptr.To[int32](0)
	owner, err := history.NewStatefulSetOwner(set)
	if err != nil {
		t.Fatal(err)
	}
	mine := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-" + owner.Hash, Namespace: "ns", UID: "r1",
		Labels: map[string]string{"app": "web", history.HashLabel: owner.Hash}}, Data: runtime.RawExtension{Raw: owner.Data}, Revision: 1}
	other := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "ns", UID: "r2",
		Labels: map[string]string{"app": "db"}}, Data: runtime.RawExtension{Raw: owner.Data}, Revision: 1}
	c, client := controllerWith(set, nil, []*appsv1.ControllerRevision{mine, other})
	if _, err := c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{mine.Name, true}, {other.Name, false}} {
		rev, err := client.AppsV1().ControllerRevisions("ns").Get(context.Background(), tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if adopted := metav1.IsControlledBy(rev, set); adopted != tc.want {
			t.Errorf("revision %s adopted %v, want %v", tc.name, adopted, tc.want)
		}
	}
	got, err := client.AppsV1().StatefulSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.UpdateRevision != mine.Name {
		t.Errorf("updateRevision %q, want the adopted %q", got.Status.UpdateRevision, mine.Name)
	}
}

// TestEventWording: kube 1.36's recordPodEvent and recordClaimEvent title-case the verb.
func TestEventWording(t *testing.T) {
	set := webSet()
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}
	c, _ := controllerWith(set, nil, nil)
	if _, err := c.sync(context.Background(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	events := c.recorder.(*record.FakeRecorder).Events
	for _, want := range []string{"Normal SuccessfulCreate Create Claim www-web-0 Pod web-0 in StatefulSet web success",
		"Normal SuccessfulCreate Create Pod web-0 in StatefulSet web successful"} {
		if got := <-events; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	}
}

// TestRefusedClaimFailsThePod: a claim the API refuses (a quota) is told twice, as kube's
// CreateStatefulPod: the claim's event, then the pod's with the claim's error, and no
// pod is created without its claim.
func TestRefusedClaimFailsThePod(t *testing.T) {
	set := webSet()
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}
	c, client := controllerWith(set, nil, nil)
	refused := apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "www-web-0", errors.New("exceeded quota: q"))
	client.PrependReactor("create", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, refused })
	if _, err := c.sync(context.Background(), "ns/web"); err == nil {
		t.Fatal("sync with the claim refused: no error")
	}
	events := c.recorder.(*record.FakeRecorder).Events
	for _, want := range []string{"Warning FailedCreate Create Claim www-web-0 for Pod web-0 in StatefulSet web failed error: " + refused.Error(),
		"Warning FailedCreate Create Pod web-0 in StatefulSet web failed error: failed to create PVC www-web-0: " + refused.Error()} {
		if got := nextEvent(events); got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	}
	if pods, _ := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods created without their claim", len(pods.Items))
	}
}

// TestClaimBeingDeletedHoldsThePod: a pod whose claim is being deleted waits for it to go
// (and be made anew) rather than start on a claim about to vanish, as kube's
// createPersistentVolumeClaims.
func TestClaimBeingDeletedHoldsThePod(t *testing.T) {
	set := webSet()
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}}}
	c, client := controllerWith(set, nil, nil)
	going := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "www-web-0", Namespace: "ns", DeletionTimestamp: &metav1.Time{}, Finalizers: []string{"kubernetes.io/pvc-protection"}}}
	c.claims = corelisters.NewPersistentVolumeClaimLister(controllertest.Indexer(going))
	if _, err := c.sync(context.Background(), "ns/web"); err == nil || err.Error() != "pvc www-web-0 is being deleted" {
		t.Fatalf("sync with the claim being deleted: %v, want pvc www-web-0 is being deleted", err)
	}
	if got, want := nextEvent(c.recorder.(*record.FakeRecorder).Events), "Warning FailedCreate Create Pod web-0 in StatefulSet web failed error: pvc www-web-0 is being deleted"; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	if pods, _ := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods created on a claim being deleted", len(pods.Items))
	}
}

// nextEvent is the next event recorded, or "" when there is none.
func nextEvent(events chan string) string {
	select {
	case e := <-events:
		return e
	default:
		return ""
	}
}
