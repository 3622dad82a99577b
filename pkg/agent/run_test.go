package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestRunPodLifecycle runs the whole agent against the fake clientset:
// registration, lease, a pod through its informer to Running, a graceful
// delete to the final delete, and health and metrics on the way.
func TestRunPodLifecycle(t *testing.T) {
	h := newHarness(t)
	a, ctx := h.run()

	waitFor(t, "node Ready", func() bool {
		node, err := h.Client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		return err == nil && nodeCondition(node, corev1.NodeReady).Status == corev1.ConditionTrue
	})
	waitFor(t, "node lease", func() bool {
		lease, err := h.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, testNode, metav1.GetOptions{})
		return err == nil && *lease.Spec.HolderIdentity == testNode && *lease.Spec.LeaseDurationSeconds == 40 &&
			len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].Kind == "Node"
	})

	pod := h.createPod(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	other := agenttest.Pod("elsewhere", corev1.RestartPolicyAlways, "app")
	other.Spec.NodeName = "node-2"
	h.createPod(other)
	waitFor(t, "pod Running", func() bool {
		got, err := h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning && got.Status.PodIP != ""
	})
	if cs, _ := h.Runtime.ListContainers(ctx, string(other.UID)); len(cs) != 0 {
		t.Errorf("ran a pod of another node: %+v", cs)
	}

	// A crash is noticed by the relist and restarted without waiting for housekeeping.
	h.Runtime.Exit(string(pod.UID), "app", 1)
	waitFor(t, "restart after a crash", func() bool {
		got, _ := h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return agenttest.ContainerStatus(got, "app").RestartCount == 1 && agenttest.ContainerStatus(got, "app").State.Running != nil
	})

	rec := httptest.NewRecorder()
	a.healthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz: %d %s", rec.Code, rec.Body)
	}
	waitFor(t, "metrics", func() bool { // the running-pods gauge is set by the next relist
		rec := httptest.NewRecorder()
		a.healthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		return strings.Contains(body, "minilet_running_pods 1") && strings.Contains(body, `minilet_pod_sync_duration_seconds_count{operation="sync"}`)
	})

	// A graceful delete as the API server does it: deletionTimestamp set, object kept.
	deleting, _ := h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](3)
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "final delete", func() bool {
		_, err := h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	waitFor(t, "containers removed", func() bool {
		cs, _ := h.Runtime.ListContainers(ctx, string(pod.UID))
		return len(cs) == 0 && h.Network.AttachedCount() == 0
	})
	waitFor(t, "worker retired", func() bool { return !a.workers.UIDs()[pod.UID] })
}

// TestRunCleansUpOrphansAndAdoptsKnownPods starts an agent on a runtime that
// already holds containers: those of a pod bound here are adopted, those of
// a pod that no longer exists are removed.
func TestRunCleansUpOrphansAndAdoptsKnownPods(t *testing.T) {
	h := newHarness(t)
	known := h.createPod(agenttest.Pod("known", corev1.RestartPolicyAlways, "app"))
	h.sync(known)
	orphan := h.createPod(agenttest.Pod("orphan", corev1.RestartPolicyAlways, "app"))
	h.sync(orphan)
	if err := h.Client.CoreV1().Pods(orphan.Namespace).Delete(h.ctx, orphan.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	strayLogs := filepath.Join(h.agent.cfg.logsDir(), "default_gone_uid-gone")
	if err := os.MkdirAll(strayLogs, 0o755); err != nil {
		t.Fatal(err)
	}
	knownIDs := containerIDs(h.Runtime, string(known.UID))
	h.Runtime.TakeCalls()

	_, ctx := h.run()

	waitFor(t, "orphan removed", func() bool {
		cs, _ := h.Runtime.ListContainers(ctx, string(orphan.UID))
		_, err := os.Stat(filepath.Join(h.agent.cfg.netnsDir(), string(orphan.UID)))
		return len(cs) == 0 && os.IsNotExist(err)
	})
	// The same cleanup pass removes stray log directories after the containers: wait for it.
	waitFor(t, "logs of an unknown pod removed", func() bool {
		_, err := os.Stat(strayLogs)
		return os.IsNotExist(err)
	})
	waitFor(t, "known pod synced", func() bool { return h.agent.workers != nil && h.agent.workers.UIDs()[known.UID] })
	time.Sleep(200 * time.Millisecond) // let its first sync finish
	if got := containerIDs(h.Runtime, string(known.UID)); strings.Join(got, ",") != strings.Join(knownIDs, ",") {
		t.Errorf("containers of the known pod changed from %v to %v", knownIDs, got)
	}
	if h.Network.AttachedCount() != 1 {
		t.Errorf("%d sandboxes attached, want the known pod's only", h.Network.AttachedCount())
	}
}

func containerIDs(rt *agenttest.Runtime, podUID string) []string {
	cs, _ := rt.ListContainers(context.Background(), podUID)
	var ids []string
	for _, c := range cs {
		if c.State == runtime.StateRunning {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// waitFor polls cond for up to 20 s.
// run runs a new agent of the harness on real time (its lease controller and informers
// need it) until the test ends, and returns it with the context it runs in.
func (h *harness) run() (*Agent, context.Context) {
	t := h.t
	a := h.newAgentOn(clock.RealClock{})
	h.agent = a
	h.Runtime.Clock = a.clock
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return a, ctx
}

// waitFor polls cond until it holds, failing t after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	controllertest.Until(t, what, 20*time.Second, cond)
}
