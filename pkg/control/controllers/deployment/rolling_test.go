package deployment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/templatehash"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// The rolling arithmetic one sync step at a time, against a fake clientset: what the
// controller writes is read back from the fake, so a size the step should not write fails.

var created = metav1.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func rollingDeployment(replicas int32, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v2"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
		},
	}
}

// replicaSet is one of d's ReplicaSets running image, age minutes younger than the oldest,
// sized size with available of its pods available; desired is the Deployment size it was
// last scaled for (its desired-replicas annotation).
func replicaSet(d *appsv1.Deployment, name, image string, age int, size, available, desired int32) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	template.Spec.Containers[0].Image = image
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: d.Namespace, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(created.Add(time.Duration(age) * time.Minute)),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)},
			Annotations:       map[string]string{desiredReplicasAnnotation: strconv.Itoa(int(desired))},
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &size, Template: template},
		Status: appsv1.ReplicaSetStatus{Replicas: size, AvailableReplicas: available, ReadyReplicas: available},
	}
}

// newRollout is one sync of d over rss, writing through a fake clientset that holds them.
func newRollout(d *appsv1.Deployment, rss ...*appsv1.ReplicaSet) (*rollout, *fake.Clientset) {
	objects := []runtime.Object{d}
	for _, rs := range rss {
		objects = append(objects, rs)
	}
	client := fake.NewClientset(objects...)
	c := &Controller{client: client, recorder: record.NewFakeRecorder(100), clock: clock.RealClock{}}
	return &rollout{c: c, d: d, all: rss}, client
}

// sizes reads every ReplicaSet's size back from the fake clientset.
func sizes(t *testing.T, client *fake.Clientset) map[string]int32 {
	t.Helper()
	list, err := client.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, rs := range list.Items {
		out[rs.Name] = replicas(&rs)
	}
	return out
}

// oldAndNew runs step on a sync of d over web-old (image v1) and the younger web-new (d's
// template), sized and available as given, and returns what step said and the sizes written.
func oldAndNew(t *testing.T, d *appsv1.Deployment, oldSize, oldAvailable, newSize, newAvailable int32,
	step func(r *rollout, old, newRS *appsv1.ReplicaSet) (bool, error)) (bool, map[string]int32) {
	t.Helper()
	want := ptr.Deref(d.Spec.Replicas, 1)
	old := replicaSet(d, "web-old", "v1", 0, oldSize, oldAvailable, want)
	newRS := replicaSet(d, "web-new", "v2", 1, newSize, newAvailable, want)
	r, client := newRollout(d, old, newRS)
	scaled, err := step(r, old, newRS)
	if err != nil {
		t.Fatal(err)
	}
	return scaled, sizes(t, client)
}

// updates counts the ReplicaSet updates the step sent.
func updates(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.Matches("update", "replicasets") {
			n++
		}
	}
	return n
}

func TestFenceposts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		replicas                   int32
		surge, unavailable         intstr.IntOrString
		wantSurge, wantUnavailable int32
	}{
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2}, // surge rounds up, unavailable down
		{3, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
		{10, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1}, // both zero would never progress
		{10, intstr.FromInt32(4), intstr.FromString("50%"), 4, 5},
		{1, intstr.FromInt32(0), intstr.FromString("100%"), 0, 1},
		{0, intstr.FromInt32(1), intstr.FromInt32(1), 1, 0}, // nothing may be unavailable of nothing
		{2, intstr.FromInt32(0), intstr.FromInt32(5), 0, 2}, // unavailable capped at the size
	} {
		t.Run(fmt.Sprintf("%d/%s/%s", tc.replicas, tc.surge.String(), tc.unavailable.String()), func(t *testing.T) {
			t.Parallel()
			d := rollingDeployment(tc.replicas, tc.surge, tc.unavailable)
			if s, u := maxSurge(d), maxUnavailable(d); s != tc.wantSurge || u != tc.wantUnavailable {
				t.Errorf("maxSurge, maxUnavailable = %d, %d; want %d, %d", s, u, tc.wantSurge, tc.wantUnavailable)
			}
		})
	}
	recreate := rollingDeployment(10, intstr.FromInt32(3), intstr.FromInt32(3))
	recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if s, u := maxSurge(recreate), maxUnavailable(recreate); s != 0 || u != 0 {
		t.Errorf("Recreate: maxSurge, maxUnavailable = %d, %d; want 0, 0", s, u)
	}
}

// TestReconcileNewReplicaSet: the new ReplicaSet grows as far as maxSurge allows over the
// total, never past the desired size, and shrinks to it when bigger.
func TestReconcileNewReplicaSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		replicas         int32
		surge            int32
		oldSize, newSize int32
		wantScaled       bool
		wantNewSize      int32
	}{
		{"no surge and old at full size: wait", 10, 0, 10, 0, false, 0},
		{"surge 2 over a full old set", 10, 2, 10, 0, true, 2},
		{"surge 2 over half an old set", 10, 2, 5, 0, true, 7},
		{"surge used up", 10, 2, 10, 2, false, 2},
		{"room beyond the desired size is not taken", 10, 5, 0, 8, true, 10},
		{"bigger than desired: shrink", 10, 2, 2, 11, true, 10},
		{"already at the desired size", 10, 2, 3, 10, false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := rollingDeployment(tc.replicas, intstr.FromInt32(tc.surge), intstr.FromInt32(0))
			scaled, got := oldAndNew(t, d, tc.oldSize, tc.oldSize, tc.newSize, tc.newSize, func(r *rollout, old, newRS *appsv1.ReplicaSet) (bool, error) {
				return r.reconcileNew(context.Background(), newRS)
			})
			if scaled != tc.wantScaled || got["web-new"] != tc.wantNewSize || got["web-old"] != tc.oldSize {
				t.Errorf("scaled %v to %v; want scaled %v, web-new %d, web-old unchanged", scaled, got, tc.wantScaled, tc.wantNewSize)
			}
		})
	}
}

// TestReconcileOldReplicaSets: old ReplicaSets shrink while desired − maxUnavailable pods
// stay available counting the new ones, unavailable old pods going first and the oldest
// ReplicaSet first.
func TestReconcileOldReplicaSets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		replicas, unavailable int32
		oldSize, oldAvailable int32
		newSize, newAvailable int32
		wantScaled            bool
		wantOldSize           int32
	}{
		{"nothing may be unavailable and the new pods are not up", 10, 0, 10, 10, 0, 0, false, 10},
		{"two may be unavailable", 10, 2, 10, 10, 0, 0, true, 8},
		{"one old pod unavailable goes first, then one available", 10, 2, 10, 9, 0, 0, true, 8},
		{"every old pod unavailable: the budget bounds the cut", 10, 2, 10, 0, 0, 0, true, 8},
		{"new pods available let the old ones go", 10, 0, 10, 10, 5, 5, true, 5},
		{"new pods not yet available hold the old ones", 10, 2, 8, 8, 2, 0, false, 8},
		{"surged new pods available: old goes to zero", 10, 0, 3, 3, 10, 10, true, 0},
		{"no old pods: nothing to do", 10, 2, 0, 0, 10, 10, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A surge of 1 keeps a maxUnavailable of 0 as it is (both 0 would make it 1).
			d := rollingDeployment(tc.replicas, intstr.FromInt32(1), intstr.FromInt32(tc.unavailable))
			scaled, got := oldAndNew(t, d, tc.oldSize, tc.oldAvailable, tc.newSize, tc.newAvailable, func(r *rollout, old, newRS *appsv1.ReplicaSet) (bool, error) {
				return r.reconcileOld(context.Background(), newRS, []*appsv1.ReplicaSet{old})
			})
			if scaled != tc.wantScaled || got["web-old"] != tc.wantOldSize || got["web-new"] != tc.newSize {
				t.Errorf("scaled %v to %v; want scaled %v, web-old %d, web-new unchanged", scaled, got, tc.wantScaled, tc.wantOldSize)
			}
		})
	}
}

// TestReconcileOldTakesTheOldestFirst: with two old ReplicaSets the older one gives up its
// pods before the younger.
func TestReconcileOldTakesTheOldestFirst(t *testing.T) {
	t.Parallel()
	d := rollingDeployment(10, intstr.FromInt32(0), intstr.FromInt32(3))
	oldest := replicaSet(d, "web-a", "v0", 0, 2, 2, 10)
	older := replicaSet(d, "web-b", "v1", 1, 8, 8, 10)
	newRS := replicaSet(d, "web-c", "v2", 2, 0, 0, 10)
	r, client := newRollout(d, oldest, older, newRS)
	if _, err := r.reconcileOld(context.Background(), newRS, []*appsv1.ReplicaSet{older, oldest}); err != nil {
		t.Fatal(err)
	}
	got := sizes(t, client)
	if got["web-a"] != 0 || got["web-b"] != 7 {
		t.Errorf("sizes %v; want web-a 0 (oldest, emptied first) and web-b 7", got)
	}
}

// TestResize: a new size mid-rollout is shared out in proportion to the active
// ReplicaSets' sizes (each rounded, as kube's controller), the largest taking what rounding
// leaves; maxSurge stays allowed.
func TestResize(t *testing.T) {
	t.Parallel()
	type rs struct {
		name                     string
		size, available, desired int32
	}
	for _, tc := range []struct {
		name       string
		replicas   int32
		surge      int32
		sets       []rs // oldest first; the last one runs the Deployment's template
		want       map[string]int32
		wantWrites int
	}{
		{"one active ReplicaSet takes the new size", 12, 0,
			[]rs{{"web-old", 0, 0, 10}, {"web-new", 10, 10, 10}}, map[string]int32{"web-old": 0, "web-new": 12}, 1},
		{"5 -> 10 in proportion", 10, 0,
			[]rs{{"web-old", 2, 2, 5}, {"web-new", 3, 3, 5}}, map[string]int32{"web-old": 4, "web-new": 6}, 2},
		{"5 -> 3: each rounded", 3, 0, // the new one not yet all available
			[]rs{{"web-old", 2, 2, 5}, {"web-new", 3, 2, 5}}, map[string]int32{"web-old": 1, "web-new": 2}, 2},
		// The conformance test "deployment should support proportional scaling": 8 old and
		// 5 new pods sized for 10+3, scaled to 30+3: 8*33/13 = 20.3, 5*33/13 = 12.7.
		{"10 -> 30 with surge 3 over 13 pods", 30, 3,
			[]rs{{"web-old", 8, 8, 10}, {"web-new", 5, 0, 10}}, map[string]int32{"web-old": 20, "web-new": 13}, 2},
		{"10 -> 20 with surge 2 over 12 pods", 20, 2,
			[]rs{{"web-old", 8, 8, 10}, {"web-new", 4, 0, 10}}, map[string]int32{"web-old": 15, "web-new": 7}, 2},
		{"scale down to zero", 0, 0,
			[]rs{{"web-old", 4, 4, 6}, {"web-new", 2, 2, 6}}, map[string]int32{"web-old": 0, "web-new": 0}, 2},
		{"new ReplicaSet full and available: the old ones go", 5, 1,
			[]rs{{"web-old", 2, 2, 4}, {"web-new", 5, 5, 4}}, map[string]int32{"web-old": 0, "web-new": 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := rollingDeployment(tc.replicas, intstr.FromInt32(tc.surge), intstr.FromInt32(1))
			var all []*appsv1.ReplicaSet
			for i, s := range tc.sets {
				image := "v1"
				if i == len(tc.sets)-1 {
					image = "v2"
				}
				set := replicaSet(d, s.name, image, i, s.size, s.available, s.desired)
				set.Annotations[maxReplicasAnnotation] = strconv.Itoa(int(s.desired + tc.surge))
				all = append(all, set)
			}
			r, client := newRollout(d, all...)
			if !r.isScalingEvent() {
				t.Fatalf("not seen as a scaling event")
			}
			newRS, old := r.split()
			if err := r.resize(context.Background(), newRS, old); err != nil {
				t.Fatal(err)
			}
			got := sizes(t, client)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("sizes %v; want %v", got, tc.want)
					break
				}
			}
			if n := updates(client); n != tc.wantWrites {
				t.Errorf("%d ReplicaSet updates, want %d: %v", n, tc.wantWrites, client.Actions())
			}
			for _, a := range client.Actions() {
				if u, ok := a.(clienttesting.UpdateAction); ok {
					if rs := u.GetObject().(*appsv1.ReplicaSet); rs.Annotations[desiredReplicasAnnotation] != strconv.Itoa(int(tc.replicas)) {
						t.Errorf("%s written with desired-replicas %q, want %d", rs.Name, rs.Annotations[desiredReplicasAnnotation], tc.replicas)
					}
				}
			}
		})
	}
}

// TestScaleReadsTheOldMaxReplicas: finding the new ReplicaSet leaves its replica
// annotations alone; scaling writes them, after it read the size they held (the conformance
// test "deployment should support proportional scaling" got 28/5 instead of 20/13 when the
// new ReplicaSet's max-replicas was already the new size).
func TestScaleReadsTheOldMaxReplicas(t *testing.T) {
	d := rollingDeployment(30, intstr.FromInt32(3), intstr.FromInt32(2))
	old := replicaSet(d, "web-old", "v1", 0, 8, 8, 10)
	newRS := replicaSet(d, "web-new", "v2", 1, 5, 0, 10)
	for i, rs := range []*appsv1.ReplicaSet{old, newRS} {
		rs.Annotations[maxReplicasAnnotation] = "13"
		rs.Annotations[revisionAnnotation] = strconv.Itoa(i + 1)
	}
	d.Annotations = map[string]string{revisionAnnotation: "2"}
	r, client := newRollout(d, old, newRS)
	if _, err := r.scale(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := sizes(t, client); got["web-old"] != 20 || got["web-new"] != 13 {
		t.Errorf("sizes %v, want web-old 20 and web-new 13", got)
	}
}

// TestNewReplicaSetTakesMinReadySeconds: a Deployment's new minReadySeconds (no new
// template, so no new ReplicaSet) reaches its current ReplicaSet, whose pods it times, as
// kube's getNewReplicaSet updates it.
func TestNewReplicaSetTakesMinReadySeconds(t *testing.T) {
	d := rollingDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.MinReadySeconds = 10
	rs := replicaSet(d, "web-new", "v2", 0, 2, 2, 2)
	rs.Annotations[revisionAnnotation] = "1"
	r, client := newRollout(d, rs)
	if _, _, err := r.replicaSets(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	got, err := client.AppsV1().ReplicaSets("default").Get(context.Background(), "web-new", metav1.GetOptions{})
	if err != nil || got.Spec.MinReadySeconds != 10 {
		t.Errorf("the new ReplicaSet's minReadySeconds = %v (%v), want the Deployment's 10", got.Spec.MinReadySeconds, err)
	}
}

// TestFailedReplicaSetCreate: a new ReplicaSet the API refuses (here a quota) shows as
// Progressing False, reason ReplicaSetCreateError, with kube's message, and a Warning
// event of that reason and message (kube's FailedRSCreateReason for both).
func TestFailedReplicaSetCreate(t *testing.T) {
	d := rollingDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	r, client := newRollout(d)
	refused := apierrors.NewForbidden(appsv1.Resource("replicasets"), "", fmt.Errorf("exceeded quota: q, requested: count/replicasets.apps=1, used: count/replicasets.apps=1, limited: count/replicasets.apps=1"))
	client.PrependReactor("create", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, refused })
	if _, _, err := r.replicaSets(context.Background(), true); err == nil {
		t.Fatal("the refused create gave no error")
	}
	got, err := client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "web-" + templatehash.Of(&d.Spec.Template, nil)
	want := fmt.Sprintf("Failed to create new replica set %q: %v", name, refused)
	cond := getCondition(got.Status, appsv1.DeploymentProgressing)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "ReplicaSetCreateError" || cond.Message != want {
		t.Errorf("Progressing = %+v, want False ReplicaSetCreateError %q", cond, want)
	}
	events := r.c.recorder.(*record.FakeRecorder).Events
	if len(events) != 1 {
		t.Fatalf("%d events, want 1", len(events))
	}
	if got := <-events; got != "Warning ReplicaSetCreateError "+want {
		t.Errorf("event %q, want Warning ReplicaSetCreateError %q", got, want)
	}
}

// TestCleanupCountsEveryOldReplicaSet: revisionHistoryLimit counts every old ReplicaSet,
// pods or not, as kube's cleanupDeployment; only empty ones beyond it are deleted, oldest
// revision first (a paused rollout keeps a non-empty one).
func TestCleanupCountsEveryOldReplicaSet(t *testing.T) {
	d := rollingDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	r1 := replicaSet(d, "web-r1", "v0", 0, 0, 0, 2)
	r1.Annotations[revisionAnnotation] = "1"
	r2 := replicaSet(d, "web-r2", "v1", 1, 1, 1, 2)
	r2.Annotations[revisionAnnotation] = "2"
	r, client := newRollout(d, r1, r2)
	if err := r.cleanup(context.Background(), []*appsv1.ReplicaSet{r1, r2}); err != nil {
		t.Fatal(err)
	}
	if got := sizes(t, client); len(got) != 1 || got["web-r2"] != 1 {
		t.Errorf("ReplicaSets left %v, want only web-r2 (1 pod)", got)
	}
}

// TestLongDeploymentNameFits: the new ReplicaSet of a Deployment whose name is near the
// 253-character limit is named with that name cut, so the hash still fits, as kube's
// generateReplicaSetName (the API would refuse <name>-<hash>).
func TestLongDeploymentNameFits(t *testing.T) {
	d := rollingDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Name = strings.Repeat("a", 250)
	r, _ := newRollout(d)
	rs, _, err := r.replicaSets(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	hash := templatehash.Of(&d.Spec.Template, nil)
	if want := strings.Repeat("a", 253-1-len(hash)) + "-" + hash; rs.Name != want {
		t.Errorf("ReplicaSet name %q (%d characters), want %q", rs.Name, len(rs.Name), want)
	}
}

// Mid-rollout, the status counts as unavailable what the ReplicaSets want and do not have,
// surge pods included, as kube's calculateStatus: 3 old available, 1 new not yet, for a
// Deployment of 3, is 1 unavailable.
func TestStatusCountsSurgePodsUnavailable(t *testing.T) {
	d := rollingDeployment(3, intstr.FromString("25%"), intstr.FromString("25%"))
	old := replicaSet(d, "web-old", "v1", 0, 3, 3, 3)
	newRS := replicaSet(d, "web-new", "v2", 1, 1, 0, 3)
	r, _ := newRollout(d, old, newRS)
	st := r.calculateStatus(newRS)
	if st.Replicas != 4 || st.AvailableReplicas != 3 || st.UpdatedReplicas != 1 || st.UnavailableReplicas != 1 {
		t.Errorf("status %+v; want replicas 4, available 3, updated 1, unavailable 1", st)
	}
}

// TestPausedCondition: pausing says Progressing Unknown DeploymentPaused and resuming
// DeploymentResumed, except over a reported ProgressDeadlineExceeded, which stays, as
// kube's checkPausedConditions.
func TestPausedCondition(t *testing.T) {
	for _, c := range []struct {
		name               string
		paused             bool
		reason, wantReason string
	}{
		{"pause a progressing rollout", true, "ReplicaSetUpdated", "DeploymentPaused"},
		{"resume", false, "DeploymentPaused", "DeploymentResumed"},
		{"pause a timed-out rollout", true, "ProgressDeadlineExceeded", "ProgressDeadlineExceeded"},
	} {
		d := rollingDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
		d.Spec.Paused = c.paused
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: c.reason}}
		r, _ := newRollout(d)
		if err := r.checkPausedCondition(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := getCondition(r.d.Status, appsv1.DeploymentProgressing); got.Reason != c.wantReason {
			t.Errorf("%s: Progressing reason %s, want %s", c.name, got.Reason, c.wantReason)
		}
	}
}
