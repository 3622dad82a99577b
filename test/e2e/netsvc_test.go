package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// netsvcApps: a pod on the second node, and a Node nobody serves (its node API address is
// the lab's client, where nothing listens) with a pod bound to it.
const netsvcApps = `apiVersion: v1
kind: Node
metadata: {name: ghost}
---
apiVersion: v1
kind: Pod
metadata: {name: ghostpod}
spec:
  nodeName: ghost
  tolerations: [{operator: Exists}]
  containers: [{name: c, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}]
`

// TestNodeProxyingAndProxyHealth: with the real kubectl, an unreachable node is reported
// in kube-apiserver's words (nodes/proxy 503 "error trying to reach service", logs the HTTP
// client's `Get "URL": ...`), a node asked for a pod it does not run answers as the
// kubelet (`pod "X" does not exist`), and miniproxy's /healthz drains a node tainted for
// deletion by the cluster autoscaler while its /livez stays 200, as kube-proxy's; its
// start-up Event is listed for the node.
func TestNodeProxyingAndProxyHealth(t *testing.T) {
	l := upLab(t, "netsvc", 2)
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	failing := func(args ...string) string {
		t.Helper()
		out, err := cluster.Kubectl(context.Background(), l, args...)
		if err == nil {
			t.Fatalf("kubectl %s succeeded: %s", strings.Join(args, " "), out)
		}
		return strings.TrimSpace(out)
	}
	first, second := l.Nodes[0], l.Nodes[1]
	kubectl("run", "far", "--image=localhost/minik8s/busybox:v1", "--image-pull-policy=Never",
		`--overrides={"apiVersion":"v1","spec":{"nodeName":"`+second.Name+`"}}`, "--", "sleep", "3600")
	applyYAML(t, l, netsvcApps)
	kubectl("patch", "node", "ghost", "--subresource=status", "--type=merge", "-p",
		`{"status":{"addresses":[{"type":"InternalIP","address":"`+lab.ClientIP+`"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}`)
	kubectl("wait", "--for=condition=Ready", "pod/far", "--timeout=120s")

	refused := "dial tcp " + lab.ClientIP + ":10250: connect: connection refused"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "--raw", "/api/v1/nodes/ghost/proxy/healthz"}, "Error from server (ServiceUnavailable): error trying to reach service: " + refused},
		{[]string{"logs", "ghostpod", "--tail=1"}, `Error from server: Get "https://` + lab.ClientIP + `:10250/containerLogs/default/ghostpod/c?tailLines=1": ` + refused},
		{[]string{"get", "--raw", "/api/v1/nodes/" + first.Name + "/proxy/containerLogs/default/far/far"}, `Error from server (NotFound): pod "far" does not exist`},
	} {
		if got := failing(tc.args...); got != tc.want {
			t.Errorf("kubectl %s:\n got %s\nwant %s", strings.Join(tc.args, " "), got, tc.want)
		}
	}

	// kube-proxy's birth cry, listed as kubectl events lists a node's.
	if out := kubectl("events", "--for", "node/"+second.Name); !regexp.MustCompile(`Normal\s+Starting\s+Node/` + regexp.QuoteMeta(second.Name)).MatchString(out) {
		t.Errorf("kubectl events --for node/%s:\n%s\nwant miniproxy's Starting event", second.Name, out)
	}

	client := lab.NetNSPath(l.Client.NetNS)
	health := func(path string) (string, error) {
		return httpGetIn(client, "http://"+second.IP+":10256"+path)
	}
	kubectl("taint", "node", second.Name, "ToBeDeletedByClusterAutoscaler=1:NoSchedule")
	waitFor(t, second.Name+"'s miniproxy /healthz to drain the node", 20*time.Second, func() (bool, string) {
		body, err := health("/healthz")
		return err != nil && strings.Contains(err.Error(), "503") && strings.Contains(body, `"nodeEligible":false,"healthy":true`), body
	})
	if body, err := health("/livez"); err != nil || strings.Contains(body, "nodeEligible") || !strings.Contains(body, `"healthy":true`) {
		t.Errorf("/livez of a node tainted for deletion: %s %v; want 200, healthy, no nodeEligible", body, err)
	}
	kubectl("taint", "node", second.Name, "ToBeDeletedByClusterAutoscaler-")
	waitFor(t, second.Name+"'s miniproxy /healthz back to 200", 20*time.Second, func() (bool, string) {
		body, err := health("/healthz")
		return err == nil && strings.Contains(body, `"nodeEligible":true`), body
	})
}
