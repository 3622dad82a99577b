package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	cadvisorapi "github.com/google/cadvisor/lib/model"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// burner spins until /tmp/stop exists, then idles.
const topPods = `apiVersion: v1
kind: Pod
metadata: {name: burner, labels: {app: burner}}
spec:
  nodeName: node-1
  containers:
  - name: burn
    image: localhost/minik8s/busybox:v1
    command: [sh, -c, 'while [ ! -f /tmp/stop ]; do :; done; exec sleep 3600']
---
apiVersion: v1
kind: Pod
metadata: {name: idler, labels: {app: idler}}
spec:
  nodeName: node-1
  containers:
  - {name: idle, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}
`

// TestTopAndStats: minilet's /stats/summary parses into the kubelet's types with real
// figures, /metrics/resource and /metrics/cadvisor carry the kubelet's metric names, and
// `kubectl top` (miniapi's own metrics.k8s.io) follows a pod that burns CPU and stops;
// each lab node's figures are its own (its daemons' and pods' cgroup), not the host's.
func TestTopAndStats(t *testing.T) {
	l := upLab(t, "top", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	applyYAML(t, l, topPods)
	waitRunning(t, l, "burner")
	waitRunning(t, l, "idler")

	// kubectl top pod: the burner uses a good part of a core (at least 0.1 on a loaded
	// machine), the idler next to nothing.
	var burn, idle int
	waitFor(t, "kubectl top pod to show the burner busy", 90*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(ctx, l, "top", "pod", "-A", "--no-headers")
		if err != nil {
			return false, out
		}
		burn, idle = topCPU(out, "burner"), topCPU(out, "idler")
		return burn >= 100 && idle >= 0 && idle < 50, out
	})
	// The burner shows on node-1 alone; node-2 (minilet and miniproxy, no pods) uses far
	// less than the host all the lab's nodes share.
	waitFor(t, "kubectl top node to show node-1 busy and node-2 not", 60*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(ctx, l, "top", "node", "--no-headers")
		if err != nil {
			return false, out
		}
		n1, n2 := topNode(out, "node-1"), topNode(out, "node-2")
		used := hostMemoryUsedMi(t)
		return n1.cpu >= 200 && n1.memMi > 0 && n2.cpu >= 0 && n2.cpu < n1.cpu/2 && n2.memMi > 0 && n2.memMi*4 < used,
			fmt.Sprintf("%s(host memory in use: %dMi)", out, used)
	})
	if out := mustKubectl(t, l, "top", "pod", "-l", "app=idler", "--no-headers"); strings.Contains(out, "burner") || !strings.Contains(out, "idler") {
		t.Errorf("kubectl top pod -l app=idler:\n%s", out)
	}

	// Discovery lists the group, as kubectl top requires.
	if out := mustKubectl(t, l, "api-resources", "--api-group=metrics.k8s.io", "--no-headers"); !strings.Contains(out, "NodeMetrics") || !strings.Contains(out, "PodMetrics") {
		t.Errorf("kubectl api-resources --api-group=metrics.k8s.io:\n%s", out)
	}

	// The node API's figures, through miniapi's nodes/proxy.
	raw := mustKubectl(t, l, "get", "--raw", "/api/v1/nodes/node-1/proxy/stats/summary")
	var summary statsapi.Summary
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&summary); err != nil {
		t.Fatalf("/stats/summary does not parse into statsapi.Summary: %v\n%s", err, raw)
	}
	checkSummary(t, &summary)
	metrics := mustKubectl(t, l, "get", "--raw", "/api/v1/nodes/node-1/proxy/metrics/resource")
	checkMetric(t, metrics, "container_cpu_usage_seconds_total", map[string]string{"container": "burn", "pod": "burner", "namespace": "default"})
	checkMetric(t, metrics, "node_memory_working_set_bytes", nil)
	cadvisor := mustKubectl(t, l, "get", "--raw", "/api/v1/nodes/node-1/proxy/metrics/cadvisor")
	checkMetric(t, cadvisor, "container_memory_working_set_bytes", map[string]string{"container": "burn", "pod": "burner"})
	checkMetric(t, cadvisor, "container_network_receive_bytes_total", map[string]string{"pod": "burner", "interface": "eth0"})
	// The machine info the node's capacity and IDs come from (the kubelet's /spec/).
	var spec cadvisorapi.MachineInfo
	if raw := mustKubectl(t, l, "get", "--raw", "/api/v1/nodes/node-1/proxy/spec/"); json.Unmarshal([]byte(raw), &spec) != nil || spec.NumCores == 0 {
		t.Errorf("/spec/ is no MachineInfo:\n%s", raw)
	}
	if node, want := mustKubectl(t, l, "get", "node", "node-1", "-o", "jsonpath={.status.capacity.cpu}/{.status.nodeInfo.bootID}"), fmt.Sprintf("%d/%s", spec.NumCores, spec.BootID); node != want {
		t.Errorf("node-1 cpu/bootID %q, /spec/ %q", node, want)
	}
	// minilet's settings as the kubelet's /configz gives them: the lab's memory threshold.
	var configz struct {
		Kubelet kubeletconfig.KubeletConfiguration `json:"kubeletconfig"`
	}
	if raw := mustKubectl(t, l, "get", "--raw", "/api/v1/nodes/node-1/proxy/configz"); json.Unmarshal([]byte(raw), &configz) != nil ||
		configz.Kubelet.EvictionHard["memory.available"] != "100Mi" || configz.Kubelet.Port != 10250 || configz.Kubelet.ClusterDomain != "cluster.local" {
		t.Errorf("/configz is not node-1's KubeletConfiguration:\n%s", raw)
	}

	// The node's pressure conditions are measured, not constant.
	conds := mustKubectl(t, l, "get", "node", "node-1", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status}/{.reason} {end}`)
	// Lab nodes share the host's disk and watch no disk signal (minilab's --eviction-hard,
	// as kind's nodes): DiskPressure stays False however full the host is.
	for _, want := range []string{"MemoryPressure=False/KubeletHasSufficientMemory", "DiskPressure=False/KubeletHasNoDiskPressure", "PIDPressure=False/KubeletHasSufficientPID"} {
		if !strings.Contains(conds, want) {
			t.Errorf("node conditions %q lack %s", conds, want)
		}
	}

	// Stop burning: top follows down.
	mustKubectl(t, l, "exec", "burner", "--", "touch", "/tmp/stop")
	waitFor(t, "kubectl top pod to show the burner idle", 90*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(ctx, l, "top", "pod", "burner", "--no-headers")
		if err != nil {
			return false, out
		}
		c := topCPU(out, "burner")
		return c >= 0 && c < 50, out
	})
	if out, err := cluster.Kubectl(ctx, l, "top", "pod", "nope"); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("kubectl top pod nope: %v\n%s", err, out)
	}
}

type nodeTop struct{ cpu, memMi int }

// topNode is node's CPU (millicores) and memory (MiB) in `kubectl top node --no-headers`
// output; -1 when it is not listed.
func topNode(out, node string) nodeTop {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[0] == node {
			mem, ok := strings.CutSuffix(f[3], "Mi")
			n, err := strconv.Atoi(mem)
			if !ok || err != nil {
				n = -1
			}
			return nodeTop{cpu: milli(f[1]), memMi: n}
		}
	}
	return nodeTop{-1, -1}
}

// hostMemoryUsedMi is the host's memory in use (total less available), in MiB.
func hostMemoryUsedMi(t *testing.T) int {
	t.Helper()
	mi, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mi.Meminfo()
	if err != nil || m.MemTotalBytes == nil || m.MemAvailableBytes == nil {
		t.Fatalf("/proc/meminfo: %v", err)
	}
	return int((*m.MemTotalBytes - *m.MemAvailableBytes) >> 20)
}

// topCPU is the millicores of pod in `kubectl top pod --no-headers` output (-A or not);
// -1 when it is not listed.
func topCPU(out, pod string) int {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == pod {
				return milli(f[i+1])
			}
		}
	}
	return -1
}

func milli(s string) int {
	if v, ok := strings.CutSuffix(s, "m"); ok {
		n, _ := strconv.Atoi(v)
		return n
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n * 1000
}

func checkSummary(t *testing.T, s *statsapi.Summary) {
	t.Helper()
	n := s.Node
	if n.NodeName != "node-1" || n.CPU == nil || n.CPU.UsageNanoCores == nil || *n.CPU.UsageNanoCores == 0 ||
		n.Memory == nil || n.Memory.WorkingSetBytes == nil || *n.Memory.WorkingSetBytes == 0 || n.Memory.AvailableBytes == nil ||
		n.Fs == nil || n.Fs.CapacityBytes == nil || n.Runtime == nil || n.Runtime.ImageFs == nil || n.Rlimit == nil || n.Rlimit.MaxPID == nil {
		b, _ := json.Marshal(n)
		t.Errorf("node stats incomplete: %s", b)
	}
	var found bool
	for _, p := range s.Pods {
		if p.PodRef.Name != "burner" {
			continue
		}
		found = true
		b, _ := json.Marshal(p)
		if len(p.Containers) != 1 || p.Containers[0].Name != "burn" {
			t.Fatalf("burner's containers: %s", b)
		}
		c := p.Containers[0]
		switch {
		case c.CPU == nil || c.CPU.UsageNanoCores == nil || *c.CPU.UsageNanoCores < 5e7:
			t.Errorf("burner's container CPU: %s", b)
		case c.Memory == nil || c.Memory.WorkingSetBytes == nil || *c.Memory.WorkingSetBytes == 0:
			t.Errorf("burner's container memory: %s", b)
		case c.Rootfs == nil || c.Rootfs.UsedBytes == nil || c.Logs == nil || c.Logs.UsedBytes == nil:
			t.Errorf("burner's container filesystems: %s", b)
		case p.CPU == nil || p.CPU.UsageNanoCores == nil || *p.CPU.UsageNanoCores < *c.CPU.UsageNanoCores/2:
			t.Errorf("burner's pod CPU: %s", b)
		case p.Network == nil || p.Network.Name != "eth0" || p.Network.RxBytes == nil:
			t.Errorf("burner's network: %s", b)
		case p.ProcessStats == nil || p.ProcessStats.ProcessCount == nil || *p.ProcessStats.ProcessCount < 2:
			t.Errorf("burner's processes (sandbox and shell): %s", b)
		case p.EphemeralStorage == nil || p.EphemeralStorage.UsedBytes == nil:
			t.Errorf("burner's ephemeral storage: %s", b)
		}
	}
	if !found {
		t.Errorf("no burner in /stats/summary")
	}
}

// checkMetric finds a sample of name with labels in a Prometheus text exposition.
func checkMetric(t *testing.T, text, name string, labels map[string]string) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewBufferString(text))
	if err != nil {
		t.Errorf("metrics do not parse: %v", err)
		return
	}
	fam := families[name]
	if fam == nil {
		t.Errorf("no %s in the metrics", name)
		return
	}
next:
	for _, m := range fam.Metric {
		got := model.LabelSet{}
		for _, lp := range m.Label {
			got[model.LabelName(lp.GetName())] = model.LabelValue(lp.GetValue())
		}
		for k, v := range labels {
			if string(got[model.LabelName(k)]) != v {
				continue next
			}
		}
		return
	}
	t.Errorf("no %s sample with labels %v", name, labels)
}
