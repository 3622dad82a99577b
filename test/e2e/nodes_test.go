package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
)

const agentAndSurvivor = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: survivor}
spec:
  replicas: 2
  selector: {matchLabels: {app: survivor}}
  template:
    metadata: {labels: {app: survivor}}
    spec:
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
`

// TestDaemonSetAndNodeFailure: a DaemonSet runs one pod per node and none on a node tainted
// NoSchedule (until the taint goes); when a node's minilet stops, the node turns
// NotReady/Unknown after the grace period and a Deployment's pods there are replaced on the
// other node once their 5 s toleration runs out.
func TestDaemonSetAndNodeFailure(t *testing.T) {
	l := upLab(t, "e2e-nodes", 2)
	ctx := context.Background()
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	// node-2 is tainted; node-1 cordoned so the Deployment's pods all start on node-2.
	kubectl("taint", "node", "node-2", "dedicated=gpu:NoSchedule")
	kubectl("cordon", "node-1")
	applyYAML(t, l, strings.Replace(agentAndSurvivor, "      tolerations:\n",
		"      tolerations:\n      - {key: dedicated, operator: Exists, effect: NoSchedule}\n", 1))
	kubectl("rollout", "status", "deployment/survivor", "--timeout=120s")
	kubectl("rollout", "status", "ds/agent", "--timeout=120s")
	if got := runningOn(t, l, "agent"); got != "node-1" {
		t.Errorf("DaemonSet pods on %q; want node-1 only (node-2 is tainted NoSchedule; DaemonSet pods still run on a cordoned node)", got)
	}
	if got := runningOn(t, l, "survivor"); got != "node-2,node-2" {
		t.Fatalf("survivor pods on %q; want both on node-2", got)
	}
	// The kubelet tells of its node in events that kubectl describe node shows: its start,
	// each condition it set, and the cordon at its next status post.
	waitFor(t, "node-1's events", 30*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(ctx, l, "describe", "node", "node-1")
		for _, want := range []string{"Starting kubelet.", "NodeHasSufficientMemory", "Node node-1 status is now: NodeReady", "Node node-1 status is now: NodeNotSchedulable"} {
			if err != nil || !strings.Contains(out, want) {
				return false, fmt.Sprintf("%v; no %q in\n%s", err, want, out)
			}
		}
		return true, ""
	})
	kubectl("taint", "node", "node-2", "dedicated-")
	kubectl("uncordon", "node-1")
	waitRunningOn(t, l, "agent", "node-1,node-2", 60*time.Second)

	// node-2's minilet stops; its containers keep running, but nobody reports them.
	if err := l.Stop("minilet-node-2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node-2 Unknown and tainted unreachable", 90*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(ctx, l, "get", "node", "node-2", "-o", "json")
		var node corev1.Node
		if err != nil || json.Unmarshal([]byte(out), &node) != nil {
			return false, fmt.Sprint(err)
		}
		unreachable := false
		for _, tn := range node.Spec.Taints {
			unreachable = unreachable || (tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoExecute)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionUnknown && unreachable, fmt.Sprintf("Ready=%s taints=%v", c.Status, node.Spec.Taints)
			}
		}
		return false, "no Ready condition"
	})
	if out := kubectl("get", "nodes"); !strings.Contains(out, "NotReady") {
		t.Errorf("kubectl get nodes shows no NotReady node:\n%s", out)
	}
	waitRunningOn(t, l, "survivor", "node-1,node-1", 60*time.Second)
	if out := kubectl("get", "events", "--field-selector", "reason=TaintManagerEviction"); !strings.Contains(out, "Marking for deletion Pod default/survivor-") {
		t.Errorf("no TaintManagerEviction event for the survivor pods:\n%s", out)
	}
}

// kubectlJSON runs kubectl with -o json inside the lab and decodes what it prints into v.
func kubectlJSON(t *testing.T, l *lab.Lab, v any, args ...string) {
	t.Helper()
	if err := json.Unmarshal([]byte(mustKubectl(t, l, append(args, "-o", "json")...)), v); err != nil {
		t.Fatal(err)
	}
}

// appPods lists the pods labelled app=<app>.
func appPods(t *testing.T, l *lab.Lab, app string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	kubectlJSON(t, l, &list, "get", "pods", "-l", "app="+app)
	return list.Items
}

// getPod is the pod name as kubectl reads it now, failing t when it cannot be read.
func getPod(t *testing.T, l *lab.Lab, name string) corev1.Pod {
	t.Helper()
	var p corev1.Pod
	kubectlJSON(t, l, &p, "get", "pod", name)
	return p
}

// podNow is the pod as kubectl reads it now: the zero Pod while it cannot be read (not yet
// created, or gone), for conditions that waitFor polls.
func podNow(l *lab.Lab, name string) corev1.Pod {
	var p corev1.Pod
	if out, err := cluster.Kubectl(context.Background(), l, "get", "pod", name, "-o", "json"); err == nil {
		_ = json.Unmarshal([]byte(out), &p)
	}
	return p
}

// runningOn lists the nodes of app's Running pods not being deleted, sorted.
func runningOn(t *testing.T, l *lab.Lab, app string) string {
	t.Helper()
	var nodes []string
	for _, p := range appPods(t, l, app) {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	sort.Strings(nodes)
	return strings.Join(nodes, ",")
}

func waitRunningOn(t *testing.T, l *lab.Lab, app, want string, within time.Duration) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s running on %s", app, want), within, func() (bool, string) {
		got := runningOn(t, l, app)
		return got == want, got
	})
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %s", within, what, state)
		}
		time.Sleep(time.Second)
	}
}
