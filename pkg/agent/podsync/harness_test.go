package podsync

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
)

const testNode = agenttest.NodeName

// harness is a syncer on agenttest's fakes.
type harness struct {
	t      *testing.T
	ctx    context.Context
	syncer *Syncer
	*agenttest.Env
	// servicesDown: the Services cannot be read; newSyncer does not wait for its Service
	// informer to sync.
	servicesDown bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, ctx: t.Context(), Env: agenttest.NewEnv()}
	h.syncer = h.newSyncer()
	return h
}

// newSyncer makes a syncer on the harness's fakes, as a restarted minilet would have:
// the same directories and cgroup root as the syncer before it, and a Service informer
// of its own, synced (unless servicesDown) and stopped when the test ends.
func (h *harness) newSyncer() *Syncer {
	h.t.Helper()
	root, cgroupRoot := h.t.TempDir(), testenv.CgroupRoot(h.t)
	if h.syncer != nil {
		root, cgroupRoot = h.syncer.cfg.RootDir, h.syncer.cfg.CgroupRoot
	} else {
		h.t.Cleanup(func() { cm.RemoveRoot(cgroupRoot) })
	}
	cfg := Config{
		NodeName: testNode, NodeIP: "10.200.0.11", CgroupRoot: cgroupRoot,
		RootDir: root, PodsDir: filepath.Join(root, "pods"), LogsDir: filepath.Join(root, "logs"),
		NetNSDir: filepath.Join(root, "netns"), SeccompDir: filepath.Join(root, "seccomp"), DNS: &dns.Configurer{},
	}
	factory, services := NewServiceInformer(h.Client)
	factory.Start(h.ctx.Done())
	h.t.Cleanup(factory.Shutdown)
	if !h.servicesDown && !cache.WaitForCacheSync(h.ctx.Done(), services.HasSynced) {
		h.t.Fatal("the Service informer did not sync")
	}
	s := New(cfg, Deps{
		Services: services, Client: h.Client, Recorder: h.Events, Runtime: h.Runtime, Network: h.Network, Clock: h.Clock, Log: slog.Default(),
		Volumes:  volumes.New(filepath.Join(root, "pods"), h.Client, func() corev1.ResourceList { return nil }, h.Clock),
		Statuses: status.NewWriter(h.Client, func(*corev1.Pod) *corev1.Pod { return nil }),
	})
	if err := s.BindNodeNetNS(); err != nil {
		h.t.Fatal(err)
	}
	for _, dir := range []string{cfg.NetNSDir, cfg.LogsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	return s
}

// createPod stores pod in the fake API and returns the stored copy.
func (h *harness) createPod(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	return agenttest.CreatePod(h.ctx, h.t, h.Client, pod)
}

// admit stores pod and gives it the state a worker makes when it first sees it.
func (h *harness) admit(pod *corev1.Pod) (*corev1.Pod, *PodState) {
	h.t.Helper()
	pod = h.createPod(pod)
	return pod, newPodState(pod, apiTime(h.Clock.Now()))
}

// start admits pod and syncs it once.
func (h *harness) start(pod *corev1.Pod) (*corev1.Pod, *PodState) {
	h.t.Helper()
	pod, st := h.admit(pod)
	h.sync(st, pod)
	return pod, st
}

// exitAndSync has container name of pod exit with code a second on, then syncs the pod.
func (h *harness) exitAndSync(st *PodState, pod *corev1.Pod, name string, code int32) {
	h.t.Helper()
	h.Clock.Step(time.Second)
	h.Runtime.Exit(string(pod.UID), name, code)
	h.sync(st, pod)
}

// wantCalls stops the test unless the runtime calls since the last take are exactly want.
func (h *harness) wantCalls(when string, want ...string) {
	h.t.Helper()
	if calls := h.Runtime.TakeCalls(); !slices.Equal(calls, want) {
		h.t.Fatalf("runtime calls %s:\n got %q\nwant %q", when, calls, want)
	}
}

// apiPod reads a pod back from the fake API.
func (h *harness) apiPod(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	return agenttest.GetPod(h.ctx, h.t, h.Client, pod)
}

// sync runs one pod sync the way a worker does, with the pod as the API has it now.
func (h *harness) sync(st *PodState, pod *corev1.Pod) time.Duration {
	h.t.Helper()
	after, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod))
	if err != nil {
		h.t.Fatalf("sync %s: %v", pod.Name, err)
	}
	return after
}

// statusUpdates counts pods/status updates sent so far.
func (h *harness) statusUpdates() int {
	n := 0
	for _, a := range h.Client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func conditionStatus(pod *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
