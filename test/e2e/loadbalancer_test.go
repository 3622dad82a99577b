package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/proxy/l2"
)

const lbApps = `apiVersion: apps/v1
kind: Deployment
metadata: {name: lb-web}
spec:
  replicas: 2
  selector: {matchLabels: {app: lb-web}}
  template:
    metadata: {labels: {app: lb-web}}
    spec:
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: lb-web}
spec:
  type: LoadBalancer
  selector: {app: lb-web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: lb-local}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: lb-local}
  ports: [{port: 80, targetPort: 8080}]
`

// localPod is the lb-local Service's only endpoint, on one node.
func localPod(name, node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: lb-local}}
spec:
  nodeName: %s
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
`, name, node)
}

// TestLoadBalancerFromOutsideTheNodes reaches LoadBalancer addresses from the lab's client
// namespace, a machine on the segment that is no node: one elected node answers ARP for
// each address (MetalLB's layer-2 idea), the one with the endpoint under
// externalTrafficPolicy Local (which then keeps the client's address), and another takes
// over, announcing itself with gratuitous ARP, when the endpoint moves or the answering
// node's miniproxy stops.
func TestLoadBalancerFromOutsideTheNodes(t *testing.T) {
	l := upLab(t, "e2e-lb", 2)
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	if l.Client == nil {
		t.Fatal("the lab has no client namespace")
	}
	client := lab.NetNSPath(l.Client.NetNS)
	applyYAML(t, l, lbApps)
	applyYAML(t, l, localPod("local-a", l.Nodes[0].Name))
	kubectl("rollout", "status", "deployment/lb-web", "--timeout=120s")
	lbIP := func(svc string) string {
		var ip string
		waitFor(t, svc+"'s load balancer address", 30*time.Second, func() (bool, string) {
			ip = strings.TrimSpace(kubectl("get", "svc", svc, "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"))
			return strings.HasPrefix(ip, "10.200.0.2"), ip
		})
		return ip
	}
	webIP, localIP := lbIP("lb-web"), lbIP("lb-local")
	macs := map[string]string{}
	for _, n := range l.Nodes {
		macs[n.Name] = nodeMAC(t, n)
	}
	nodeNames := []string{l.Nodes[0].Name, l.Nodes[1].Name}

	// externalTrafficPolicy Cluster: the elected node answers, for any endpoint.
	owner := l2.Elect(webIP, nodeNames)
	if got, err := getEventually(client, "http://"+webIP+":80/hostname", 30*time.Second); err != nil || !strings.HasPrefix(got, "lb-web-") {
		t.Fatalf("client → %s = %q, %v", webIP, got, err)
	}
	waitNeighbour(t, l, webIP, owner, macs)

	// externalTrafficPolicy Local: the node with the endpoint answers, and the endpoint
	// sees the client's own address.
	waitReadyEndpoints(t, l, "lb-local", 1)
	if got, err := getEventually(client, "http://"+localIP+":80/clientip", 30*time.Second); err != nil || !strings.HasPrefix(got, lab.ClientIP+":") {
		t.Errorf("client → %s/clientip = %q, %v; want the client's address %s kept", localIP, got, err, lab.ClientIP)
	}
	waitNeighbour(t, l, localIP, l.Nodes[0].Name, macs)
	// Its healthCheckNodePort, what a cloud load balancer probes: kube-proxy's answer on
	// every node, 200 where the endpoint is, 503 elsewhere.
	hc := strings.TrimSpace(kubectl("get", "svc", "lb-local", "-o", "jsonpath={.spec.healthCheckNodePort}"))
	for i, n := range l.Nodes {
		wantCode, wantCount := "", 1
		if i != 0 {
			wantCode, wantCount = "503", 0
		}
		want := fmt.Sprintf("{\n\t\"service\": {\n\t\t\"namespace\": \"default\",\n\t\t\"name\": \"lb-local\"\n\t},\n\t\"localEndpoints\": %d,\n\t\"serviceProxyHealthy\": true\n}", wantCount)
		waitFor(t, fmt.Sprintf("%s's health check node port %s", n.Name, hc), 20*time.Second, func() (bool, string) {
			got, err := httpGetIn(client, "http://"+n.IP+":"+hc+"/healthz")
			return got == want && (err == nil) == (wantCode == "") && (err == nil || strings.Contains(err.Error(), wantCode)), fmt.Sprintf("%q %v", got, err)
		})
	}
	// The endpoint moves to the other node: so does the address.
	kubectl("delete", "pod", "local-a", "--wait=true")
	applyYAML(t, l, localPod("local-b", l.Nodes[1].Name))
	waitReadyEndpoints(t, l, "lb-local", 1)
	waitNeighbour(t, l, localIP, l.Nodes[1].Name, macs)
	if got, err := getEventually(client, "http://"+localIP+":80/hostname", 30*time.Second); err != nil || got != "local-b" {
		t.Errorf("client → %s after the endpoint moved = %q, %v; want local-b", localIP, got, err)
	}

	// The answering node's miniproxy stops: the other node takes the address over.
	other := nodeNames[0]
	if owner == other {
		other = nodeNames[1]
	}
	if err := l.Stop("miniproxy-"+owner, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitNeighbour(t, l, webIP, other, macs)
	if got, err := getEventually(client, "http://"+webIP+":80/hostname", 30*time.Second); err != nil || !strings.HasPrefix(got, "lb-web-") {
		t.Errorf("client → %s after %s's miniproxy stopped = %q, %v", webIP, owner, got, err)
	}
}

// nodeMAC is the hardware address of a node's lab interface.
func nodeMAC(t *testing.T, n lab.Node) string {
	t.Helper()
	// Through netlink: /sys shows the host's interfaces (the mount namespace is the host's).
	out, err := lab.Command(context.Background(), n.NetNS, "ip", "-br", "link", "show", "dev", lab.MemberInterface).Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 3 {
		t.Fatalf("%s's hardware address: %q %v", n.Name, out, err)
	}
	return f[2]
}

// waitNeighbour waits until the client's neighbour entry for ip is node's hardware
// address: that node answered ARP (or announced itself), and only it.
func waitNeighbour(t *testing.T, l *lab.Lab, ip, node string, macs map[string]string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the client to reach %s through %s (%s)", ip, node, macs[node]), 20*time.Second, func() (bool, string) {
		// A connection to the address makes the client ask when it has no entry.
		_, _ = httpGetIn(lab.NetNSPath(l.Client.NetNS), "http://"+ip+":80/hostname")
		out, _ := lab.Command(context.Background(), l.Client.NetNS, "ip", "neigh", "show", ip).CombinedOutput()
		return strings.Contains(string(out), "lladdr "+macs[node]+" "), strings.TrimSpace(string(out))
	})
}
