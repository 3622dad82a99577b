package agent

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/stats"
)

const testNode = agenttest.NodeName

// harness is an agent on agenttest's fakes.
type harness struct {
	t     *testing.T
	ctx   context.Context
	agent *Agent
	*agenttest.Env
	servicesOf *Agent // the agent whose Service informer sync started
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, ctx: t.Context(), Env: agenttest.NewEnv()}
	h.agent = h.newAgent()
	return h
}

// newAgent makes an agent on the harness's fakes, as a restarted minilet would be.
func (h *harness) newAgent() *Agent {
	h.t.Helper()
	return h.newAgentOn(h.Clock)
}

// newAgentOn makes an agent on the harness's fakes and clk.
func (h *harness) newAgentOn(clk clock.WithTicker) *Agent {
	h.t.Helper()
	cfg := Config{
		NodeName: testNode, NodeIP: "10.200.0.11", PodCIDR: "10.244.1.0/24", RootDir: h.t.TempDir(),
		ContainerdAddress: "/run/containerd/containerd.sock", ContainerdNamespace: "minilet", CNIBinDir: "/usr/lib/cni", CNIBridge: "cni0", CgroupRoot: testenv.CgroupRoot(h.t), ContainerLogMaxSize: "10Mi", ContainerLogMaxFiles: 5,
		Eviction: stats.EvictionFlags{Hard: stats.DefaultEvictionHard},
	}
	if h.agent != nil {
		cfg.RootDir, cfg.CgroupRoot = h.agent.cfg.RootDir, h.agent.cfg.CgroupRoot
	} else {
		h.t.Cleanup(func() { cm.RemoveRoot(cfg.CgroupRoot) })
	}
	a, err := New(cfg, Dependencies{Client: h.Client, Recorder: h.Events, Runtime: h.Runtime, Network: h.Network, Clock: clk})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := a.sync.BindNodeNetNS(); err != nil {
		h.t.Fatal(err)
	}
	for _, dir := range []string{cfg.netnsDir(), cfg.logsDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	return a
}

// createPod stores pod in the fake API and returns the stored copy.
func (h *harness) createPod(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	return agenttest.CreatePod(h.ctx, h.t, h.Client, pod)
}

// sync runs a pod's first sync the way a worker does, with the pod as the API has it now.
func (h *harness) sync(pod *corev1.Pod) {
	h.t.Helper()
	if h.servicesOf != h.agent { // syncs without Run: the agent's Service informer runs until the test ends
		h.servicesOf = h.agent
		h.agent.services.Start(h.ctx.Done())
		h.t.Cleanup(h.agent.services.Shutdown)
		for typ, ok := range h.agent.services.WaitForCacheSync(h.ctx.Done()) {
			if !ok {
				h.t.Fatalf("informer of %v did not sync", typ)
			}
		}
	}
	if _, err := h.agent.sync.SyncPod(h.ctx, h.agent.sync.NewPodState(pod), agenttest.GetPod(h.ctx, h.t, h.Client, pod)); err != nil {
		h.t.Fatalf("sync %s: %v", pod.Name, err)
	}
}
