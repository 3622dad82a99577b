package podsource

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
)

// recordingWorkers note what the sources hand them, as "update <rv>" or "reconcile <rv>".
type recordingWorkers struct {
	calls []string
	known bool // Reconcile finds a worker
}

func (r *recordingWorkers) Update(pod *corev1.Pod) {
	r.calls = append(r.calls, "update "+pod.ResourceVersion)
}

func (r *recordingWorkers) Reconcile(pod *corev1.Pod) bool {
	r.calls = append(r.calls, "reconcile "+pod.ResourceVersion)
	return r.known
}

func (r *recordingWorkers) Remove(types.UID) {}

func newSources(w Workers) *Sources {
	return New(Config{NodeName: "node-a", Client: fake.NewClientset(), Workers: w, Log: slog.Default(),
		NodeEvent: func(string, string, string, ...any) {}})
}

func boundPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", ResourceVersion: "1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "a"}},
		Spec:   corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "img:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// An update that changes only a pod's status (minilet's own write coming back, another
// writer's condition) is the kubelet's RECONCILE (podsDifferSemantically false): the worker
// gets the newest pod without a sync. A change of the spec, labels, annotations or
// deletion is an UPDATE: a sync.
func TestUpdateSyncsOnlyOnSemanticChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		want   string
	}{
		{"status only", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}, "reconcile 2"},
		{"spec", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "img:2" }, "update 2"},
		{"labels", func(p *corev1.Pod) { p.Labels["tier"] = "front" }, "update 2"},
		{"annotations", func(p *corev1.Pod) { p.Annotations["note"] = "b" }, "update 2"},
		{"deletionTimestamp", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}, "update 2"},
		{"deletionGracePeriodSeconds", func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = ptr.To[int64](30) }, "update 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &recordingWorkers{known: true}
			old := boundPod()
			pod := old.DeepCopy()
			pod.ResourceVersion = "2"
			tc.change(pod)
			newSources(w).eventHandler().OnUpdate(old, pod)
			if !slices.Equal(w.calls, []string{tc.want}) {
				t.Errorf("workers got %q, want %q", w.calls, tc.want)
			}
		})
	}
}

// A status-only change still syncs when the pod's Ready condition is out of line with its
// readiness gates (their controller set one), as the kubelet's HandlePodReconcile on
// NeedToReconcilePodReadiness; and a pod without a worker yet starts as a new one.
func TestReconcileSyncsWhenReadinessOutOfLine(t *testing.T) {
	gated := func() *corev1.Pod {
		p := boundPod()
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
				Message: `corresponding condition of pod readiness gate "example.com/lb" does not exist.`}}}
		return p
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		known  bool
		want   []string
	}{
		{"gate set True", func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue})
		}, true, []string{"update 2"}},
		{"gate set False", func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionFalse})
		}, true, []string{"update 2"}},
		{"Ready in line", func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: time.Now()} }, true, []string{"reconcile 2"}},

		{"no worker", func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: time.Now()} }, false, []string{"reconcile 2", "update 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &recordingWorkers{known: tc.known}
			old := gated()
			pod := old.DeepCopy()
			pod.ResourceVersion = "2"
			tc.change(pod)
			newSources(w).eventHandler().OnUpdate(old, pod)
			if !slices.Equal(w.calls, tc.want) {
				t.Errorf("workers got %q, want %q", w.calls, tc.want)
			}
		})
	}
}

// A Ready condition another writer turned False (the node lifecycle controller's
// MarkPodsNotReady) while the containers are ready syncs the pod, so that minilet writes
// Ready anew at once, as the kubelet's status manager reconciles such a status.
func TestReconcileSyncsWhenReadyChangedByAnother(t *testing.T) {
	old := boundPod()
	old.Status = corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true}},
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pod := old.DeepCopy()
	pod.ResourceVersion = "2"
	pod.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady"}
	w := &recordingWorkers{known: true}
	newSources(w).eventHandler().OnUpdate(old, pod)
	if want := []string{"update 2"}; !slices.Equal(w.calls, want) {
		t.Errorf("workers got %q, want %q", w.calls, want)
	}
}

// A mirror pod's status is the static pod's, which its worker writes: a status-only change
// of the mirror (that write coming back) does not sync the static pod, as the kubelet's
// HandlePodReconcile on a mirror; a new mirror and a changed one do (HandlePodAdditions and
// HandlePodUpdates sync the static pod).
func TestMirrorStatusChangeDoesNotSyncStaticPod(t *testing.T) {
	static := boundPod()
	static.UID = "uid-static"
	static.ResourceVersion = "static"
	mirror := boundPod()
	mirror.UID = "uid-mirror"
	mirror.Annotations[staticpod.AnnotationMirror] = string(static.UID)
	w := &recordingWorkers{known: true}
	s := newSources(w)
	s.static = map[types.UID]*corev1.Pod{static.UID: static}
	h := s.eventHandler()

	h.OnAdd(mirror, false)
	written := mirror.DeepCopy()
	written.ResourceVersion = "2"
	written.Status.Phase = corev1.PodRunning
	h.OnUpdate(mirror, written)
	relabelled := written.DeepCopy()
	relabelled.ResourceVersion = "3"
	relabelled.Labels["tier"] = "front"
	h.OnUpdate(written, relabelled)
	if want := []string{"update static", "update static"}; !slices.Equal(w.calls, want) {
		t.Errorf("workers got %q, want %q (a new mirror, its label change; not its status)", w.calls, want)
	}
}
