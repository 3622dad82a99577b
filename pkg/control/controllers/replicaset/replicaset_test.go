package replicaset_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func template(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/netexec:v1"}}},
	}
}

func replicaSet(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: template(name)},
	}
}

// ownedPods lists the active pods of namespace whose controller has uid, sorted by name.
func ownedPods(t *testing.T, c kubernetes.Interface, namespace, uid string) []corev1.Pod {
	t.Helper()
	list, err := c.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && string(ref.UID) == uid && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func waitOwned(t *testing.T, c kubernetes.Interface, namespace, uid string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	controllertest.WaitFor(t, fmt.Sprintf("%d owned pods", n), 20*time.Second, func() (bool, string) {
		pods = ownedPods(t, c, namespace, uid)
		return len(pods) == n, fmt.Sprintf("%d pods", len(pods))
	})
	return pods
}

// markReady plays the kubelet: the pod runs and is Ready.
func markReady(t *testing.T, c kubernetes.Interface, pod corev1.Pod) {
	t.Helper()
	if _, err := controllertest.MarkReady(context.Background(), c, &pod); err != nil {
		t.Fatal(err)
	}
}

// The tests share the package's miniapi, each in a namespace of its own, and run in
// parallel: most of their time is waiting for the controller.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

func TestReplicaSetScalesAndRanks(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	rsClient := cl.Client.AppsV1().ReplicaSets(cl.Namespace)
	rs, err := rsClient.Create(ctx, replicaSet("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(rs.UID)
	pods := waitOwned(t, cl.Client, cl.Namespace, uid, 3)
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "web-") || p.Labels["app"] != "web" {
			t.Errorf("pod %s labels %v: want a name after the set and the template's labels", p.Name, p.Labels)
		}
		ref := metav1.GetControllerOf(&p)
		if ref.Kind != "ReplicaSet" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s controller ref %+v", p.Name, ref)
		}
	}
	// Two pods become ready; scaling to 2 must delete the one that is not.
	markReady(t, cl.Client, pods[0])
	markReady(t, cl.Client, pods[2])
	controllertest.WaitFor(t, "status with 2 ready", 20*time.Second, func() (bool, string) {
		got, _ := rsClient.Get(ctx, "web", metav1.GetOptions{})
		return got.Status.Replicas == 3 && got.Status.ReadyReplicas == 2 && got.Status.AvailableReplicas == 2 &&
			got.Status.FullyLabeledReplicas == 3 && got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", got.Status)
	})
	cl.MustKubectl(t, "", "scale", "rs/web", "--replicas=2")
	left := waitOwned(t, cl.Client, cl.Namespace, uid, 2)
	if left[0].Name != pods[0].Name || left[1].Name != pods[2].Name {
		t.Errorf("scale-down kept %s and %s, want the ready %s and %s", left[0].Name, left[1].Name, pods[0].Name, pods[2].Name)
	}
	// The controller records its events asynchronously: wait for the delete's, then read
	// them all as a user would.
	controllertest.WaitFor(t, "the SuccessfulDelete event", 20*time.Second, func() (bool, string) {
		events, err := cl.Client.CoreV1().Events(cl.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == "SuccessfulDelete" }), fmt.Sprint(len(events.Items), " events")
	})
	out := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=web")
	for _, want := range []string{"SuccessfulCreate", "Created pod: web-", "SuccessfulDelete", "Deleted pod: " + pods[1].Name} {
		if !strings.Contains(out, want) {
			t.Errorf("events lack %q:\n%s", want, out)
		}
	}
}

func TestReplicaSetAdoptsAndReleases(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Labels: map[string]string{"app": "api"}}, Spec: template("api").Spec}
	if _, err := cl.Client.CoreV1().Pods(cl.Namespace).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the controller's pod cache see the orphan before the set appears, as it would
	// have long before on a live cluster; otherwise the set may create both pods first.
	time.Sleep(500 * time.Millisecond)
	rs, err := cl.Client.AppsV1().ReplicaSets(cl.Namespace).Create(ctx, replicaSet("api", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 2)
	adopted := false
	for _, p := range pods {
		adopted = adopted || p.Name == "orphan"
	}
	if !adopted {
		t.Fatalf("the matching orphan was not adopted: owned %v", names(pods))
	}
	// Relabel the adopted pod out of the selector: released, and replaced.
	patch := []byte(`{"metadata":{"labels":{"app":"elsewhere"}}}`)
	if _, err := cl.Client.CoreV1().Pods(cl.Namespace).Patch(ctx, "orphan", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the relabelled pod released", 20*time.Second, func() (bool, string) {
		p, err := cl.Client.CoreV1().Pods(cl.Namespace).Get(ctx, "orphan", metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(p) == nil, fmt.Sprintf("%v %v", err, p.OwnerReferences)
	})
	after := waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 2)
	for _, p := range after {
		if p.Name == "orphan" {
			t.Errorf("released pod still owned")
		}
	}
}

// TestReplicationControllerBurst checks the ReplicationController path and that a burst of
// creations never makes more pods than asked: every pod the controller creates is watched
// and counted.
func TestReplicationControllerBurst(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := cl.Client.CoreV1().Pods(cl.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](40), Selector: map[string]string{"app": "burst"},
			Template: ptr.To(template("burst"))},
	}
	created, err := cl.Client.CoreV1().ReplicationControllers(cl.Namespace).Create(ctx, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitOwned(t, cl.Client, cl.Namespace, string(created.UID), 40)
	time.Sleep(2 * time.Second) // room for a late, wrong extra creation
	if got := len(ownedPods(t, cl.Client, cl.Namespace, string(created.UID))); got != 40 {
		t.Fatalf("%d pods after the burst settled, want exactly 40", got)
	}
	adds := 0
	for drained := false; !drained; {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == "ADDED" {
				adds++
			}
		case <-time.After(500 * time.Millisecond):
			drained = true
		}
	}
	if adds != 40 {
		t.Errorf("%d pods were created in all, want 40 (no extra creation)", adds)
	}
	controllertest.WaitFor(t, "RC status", 20*time.Second, func() (bool, string) {
		got, _ := cl.Client.CoreV1().ReplicationControllers(cl.Namespace).Get(ctx, "burst", metav1.GetOptions{})
		return got.Status.Replicas == 40 && got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", got.Status)
	})
	cl.MustKubectl(t, "", "scale", "rc/burst", "--replicas=0")
	waitOwned(t, cl.Client, cl.Namespace, string(created.UID), 0)
}

// TestReplicaFailure: a template the pod validation refuses (a finalizer that is no
// qualified name: templates do not validate finalizers, pods do, as in Kubernetes) gives
// the ReplicaFailure condition and a FailedCreate event, and few attempts (slow start).
func TestReplicaFailure(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	rs := replicaSet("broken", 8)
	rs.Spec.Template.Finalizers = []string{"not a finalizer"}
	if _, err := cl.Client.AppsV1().ReplicaSets(cl.Namespace).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "ReplicaFailure condition", 20*time.Second, func() (bool, string) {
		got, _ := cl.Client.AppsV1().ReplicaSets(cl.Namespace).Get(ctx, "broken", metav1.GetOptions{})
		for _, c := range got.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" && strings.Contains(c.Message, "finalizer") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", got.Status.Conditions)
	})
	time.Sleep(3 * time.Second)
	// Each sync tries one pod (slow start stops at the first failure) and the retries back
	// off exponentially from 5 ms: about a dozen attempts in the first seconds, where a
	// hot loop or creating all 8 pods per attempt would make many times more.
	if n := failedCreates(t, cl.Client, cl.Namespace, "broken"); n == 0 || n > 16 {
		t.Errorf("%d FailedCreate events within ~3 s: want some, and a back-off (at most 16)", n)
	}
}

// failedCreates counts the FailedCreate events of the ReplicaSet name.
func failedCreates(t *testing.T, c kubernetes.Interface, namespace, name string) int32 {
	t.Helper()
	events, err := c.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range events.Items {
		if e.Reason == "FailedCreate" && strings.HasPrefix(e.Message, "Error creating: ") {
			n += e.Count
		}
	}
	return n
}

// TestReplicaFailureUnderQuota: creates a ResourceQuota refuses name a new pod each time,
// so each failure's message differs. The ReplicaFailure condition keeps the first one, as
// kube's calculateStatus does: rewriting it would update the ReplicaSet, whose update
// event queues it again past the back-off, a hot loop of refused creates.
func TestReplicaFailureUnderQuota(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	controllertest.PodQuota(t, cl.Client, cl.Namespace, 1)
	if _, err := cl.Client.AppsV1().ReplicaSets(cl.Namespace).Create(ctx, replicaSet("quota", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	condition := func() string {
		got, _ := cl.Client.AppsV1().ReplicaSets(cl.Namespace).Get(ctx, "quota", metav1.GetOptions{})
		for _, c := range got.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue && c.Reason == "FailedCreate" {
				return c.Message
			}
		}
		return ""
	}
	controllertest.WaitFor(t, "ReplicaFailure condition", 20*time.Second, func() (bool, string) {
		return strings.Contains(condition(), "exceeded quota"), condition()
	})
	first := condition()
	time.Sleep(3 * time.Second)
	if got := condition(); got != first {
		t.Errorf("ReplicaFailure message rewritten: %q, then %q", first, got)
	}
	if n := failedCreates(t, cl.Client, cl.Namespace, "quota"); n == 0 || n > 16 {
		t.Errorf("%d FailedCreate events within ~3 s: want some, and a back-off (at most 16)", n)
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// A ReplicaSet counts its pods being deleted in status.terminatingReplicas (Kubernetes
// v1.36, DeploymentReplicaSetTerminatingReplicas on by default): 0 when none, 1 while a
// deleted pod is held by a finalizer (replaced meanwhile), 0 again once it is gone.
func TestReplicaSetTerminatingReplicas(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	rsClient := cl.Client.AppsV1().ReplicaSets(cl.Namespace)
	rs, err := rsClient.Create(ctx, replicaSet("held", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	terminating := func(want string) {
		t.Helper()
		controllertest.WaitFor(t, "terminatingReplicas "+want, 20*time.Second, func() (bool, string) {
			got, err := rsClient.Get(ctx, "held", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := "<nil>"
			if got.Status.TerminatingReplicas != nil {
				s = fmt.Sprint(*got.Status.TerminatingReplicas)
			}
			return s == want && got.Status.Replicas == 2, fmt.Sprintf("terminating %s, replicas %d", s, got.Status.Replicas)
		})
	}
	pods := waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 2)
	terminating("0")
	release := controllertest.HoldTerminating(t, cl.Client, cl.Namespace, pods[0].Name)
	waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 2)
	terminating("1")
	release()
	terminating("0")
}

// As in Kubernetes, a pod's controller.kubernetes.io/pod-deletion-cost ranks it among pods
// equally ready: scaling down keeps the costliest, though it restarted most and became
// ready last, each of which alone would send it first.
func TestReplicaSetScaleDownHonoursDeletionCost(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ctx := context.Background()
	rsClient := cl.Client.AppsV1().ReplicaSets(cl.Namespace)
	rs, err := rsClient.Create(ctx, replicaSet("costly", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 3)
	keep := pods[0]
	cl.MustKubectl(t, "", "annotate", "pod", keep.Name, "controller.kubernetes.io/pod-deletion-cost=100")
	restarted, err := cl.Client.CoreV1().Pods(cl.Namespace).Get(ctx, keep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restarted.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "localhost/minik8s/netexec:v1", RestartCount: 5}}
	if _, err := cl.Client.CoreV1().Pods(cl.Namespace).UpdateStatus(ctx, restarted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []corev1.Pod{pods[1], pods[2], keep} {
		markReady(t, cl.Client, p)
	}
	controllertest.WaitFor(t, "status with 3 ready", 20*time.Second, func() (bool, string) {
		got, _ := rsClient.Get(ctx, "costly", metav1.GetOptions{})
		return got.Status.ReadyReplicas == 3, fmt.Sprintf("%+v", got.Status)
	})
	cl.MustKubectl(t, "", "scale", "rs/costly", "--replicas=1")
	if left := waitOwned(t, cl.Client, cl.Namespace, string(rs.UID), 1); left[0].Name != keep.Name {
		t.Errorf("scale-down kept %s, want %s, whose deletion cost is 100", left[0].Name, keep.Name)
	}
}
