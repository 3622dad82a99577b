package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const testNode = "node-1"

// harness is an agent on fakes: client-go's fake clientset, an in-memory
// runtime and network, a fake clock and an event recorder to read.
type harness struct {
	t      *testing.T
	ctx    context.Context
	agent  *Agent
	rt     *fakeRuntime
	net    *fakeNetwork
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	events *record.FakeRecorder
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	h := &harness{t: t, ctx: t.Context(), rt: newFakeRuntime(clk), net: newFakeNetwork(), client: fake.NewClientset(), clock: clk,
		events: record.NewFakeRecorder(10000)}
	h.agent = h.newAgent()
	return h
}

// newAgent makes an agent on the harness's fakes, as a restarted minilet would be.
func (h *harness) newAgent() *Agent {
	h.t.Helper()
	return h.newAgentOn(h.clock)
}

// newAgentOn makes an agent on the harness's fakes and clk.
func (h *harness) newAgentOn(clk clock.WithTicker) *Agent {
	h.t.Helper()
	cfg := Config{
		NodeName: testNode, NodeIP: "10.200.0.11", PodCIDR: "10.244.1.0/24", RootDir: h.t.TempDir(),
		ContainerdAddress: "/run/containerd/containerd.sock", ContainerdNamespace: "minilet", CNIBinDir: "/usr/lib/cni", CNIBridge: "cni0", CgroupRoot: "/minik8s-test-" + filepath.Base(h.t.TempDir()), ContainerLogMaxSize: "10Mi", ContainerLogMaxFiles: 5,
	}
	if h.agent != nil {
		cfg.RootDir, cfg.CgroupRoot = h.agent.cfg.RootDir, h.agent.cfg.CgroupRoot
	} else {
		h.t.Cleanup(func() { cm.RemoveRoot(cfg.CgroupRoot) })
	}
	a, err := New(cfg, Dependencies{Client: h.client, Recorder: h.events, Runtime: h.rt, Network: h.net, Clock: clk})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := a.bindNodeNetNS(); err != nil {
		h.t.Fatal(err)
	}
	for _, dir := range []string{cfg.netnsDir(), cfg.logsDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
	return a
}

func testPod(name string, restart corev1.RestartPolicy, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:                      testNode,
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: c, Image: "localhost/minik8s/busybox:v1", Command: []string{"sleep", "3600"}, ImagePullPolicy: corev1.PullIfNotPresent,
		})
	}
	return pod
}

// createPod stores pod in the fake API and returns the stored copy.
func (h *harness) createPod(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	created, err := h.client.CoreV1().Pods(pod.Namespace).Create(h.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

// apiPod reads a pod back from the fake API.
func (h *harness) apiPod(pod *corev1.Pod) *corev1.Pod {
	h.t.Helper()
	got, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return got
}

// sync runs one pod sync the way a worker does, with the pod as the API has it now.
func (h *harness) sync(st *podState, pod *corev1.Pod) time.Duration {
	h.t.Helper()
	after, err := h.agent.syncPod(h.ctx, st, h.apiPod(pod))
	if err != nil {
		h.t.Fatalf("sync %s: %v", pod.Name, err)
	}
	return after
}

// statusUpdates counts pods/status updates sent so far.
func (h *harness) statusUpdates() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// takeEvents returns the events recorded since the last call.
func (h *harness) takeEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func containerStatusOf(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func conditionStatus(pod *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
