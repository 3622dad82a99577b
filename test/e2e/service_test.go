package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// nobodyService is a Service whose selector matches no pod: it never has endpoints.
const nobodyService = `apiVersion: v1
kind: Service
metadata: {name: nobody}
spec:
  selector: {app: nobody}
  ports: [{port: 80, targetPort: 8080}]
`

const webApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http, nodePort: 30080}]
---
` + nobodyService

// TestDeploymentBehindAService is what a user does first: a Deployment (scheduled, not
// pinned), a Service in front of it, traffic to its ClusterIP and NodePort from pods and
// nodes, and a rolling update that keeps every replica serving.
func TestDeploymentBehindAService(t *testing.T) {
	l := upLab(t, "e2e-svc", 2)
	ctx := context.Background()
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	applyYAML(t, l, webApp)
	kubectl("rollout", "status", "deployment/web", "--timeout=120s")
	if out := kubectl("get", "deployment", "web"); !strings.Contains(strings.Join(strings.Fields(out), " "), "web 4/4 4 4") {
		t.Errorf("kubectl get deployment web:\n%s", out)
	}
	var svc corev1.Service
	kubectlJSON(t, l, &svc, "get", "service", "web")
	waitReadyEndpoints(t, l, "web", 4)

	n1, n2 := l.Nodes[0], l.Nodes[1]
	clusterURL := fmt.Sprintf("http://%s:80/hostname", svc.Spec.ClusterIP)
	// miniproxy programs the rules within its sync period of the endpoints appearing.
	if got, err := getEventually(lab.NetNSPath(n1.NetNS), clusterURL, 15*time.Second); err != nil {
		t.Fatalf("node-1 → %s: %q %v", clusterURL, got, err)
	}
	// From a node: several replicas answer the ClusterIP (miniproxy may still be a sync
	// behind the last endpoints: ask for a bounded while).
	names := map[string]bool{}
	for deadline := time.Now().Add(15 * time.Second); len(names) < 2 && time.Now().Before(deadline); {
		got, err := httpGetIn(lab.NetNSPath(n1.NetNS), clusterURL)
		if err != nil {
			t.Fatalf("node-1 → %s: %v", clusterURL, err)
		}
		names[got] = true
		time.Sleep(50 * time.Millisecond)
	}
	if len(names) < 2 {
		t.Errorf("the ClusterIP reached %v from node-1 in 15 s; want at least 2 replicas", names)
	}
	// From a pod: the ClusterIP works too.
	pod, node := runningPod(t, l, "web")
	if got, err := httpGetIn(filepath.Join(node.RunDir, "netns", string(pod.UID)), clusterURL); err != nil || !strings.HasPrefix(got, "web-") {
		t.Errorf("pod %s → %s = %q, %v", pod.Name, clusterURL, got, err)
	}
	// The NodePort on the other node's address (node-2's miniproxy may still be a sync
	// behind node-1's on a loaded host).
	nodePortURL := fmt.Sprintf("http://%s:30080/hostname", n2.IP)
	if got, err := getEventually(lab.NetNSPath(n1.NetNS), nodePortURL, 15*time.Second); err != nil || !strings.HasPrefix(got, "web-") {
		t.Errorf("node-1 → %s = %q, %v", nodePortURL, got, err)
	}
	// A Service without endpoints refuses at once.
	var nobody corev1.Service
	kubectlJSON(t, l, &nobody, "get", "service", "nobody")
	start := time.Now()
	_, err := httpGetIn(lab.NetNSPath(n1.NetNS), fmt.Sprintf("http://%s:80/", nobody.Spec.ClusterIP))
	if !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 2*time.Second {
		t.Errorf("a Service without endpoints: %v after %v; want connection refused at once", err, time.Since(start))
	}
	// kube-proxy's layout in the node's iptables.
	save, err := lab.Command(ctx, n1.NetNS, "iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-j KUBE-SERVICES", "default/web:http cluster IP", "-j KUBE-SVC-", "-j DNAT --to-destination 10.244.", "KUBE-NODEPORTS"} {
		if !strings.Contains(string(save), want) {
			t.Errorf("node-1's nat table lacks %q", want)
		}
	}

	// A LoadBalancer Service gets an address from the lab's pool and answers on it.
	kubectl("expose", "deployment", "web", "--name", "web-lb", "--type", "LoadBalancer", "--port", "80", "--target-port", "8080")
	var lbIP string
	waitFor(t, "web-lb's load balancer address", 30*time.Second, func() (bool, string) {
		lbIP = strings.TrimSpace(kubectl("get", "svc", "web-lb", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}"))
		return strings.HasPrefix(lbIP, "10.200.0.2"), lbIP
	})
	if got, err := getEventually(lab.NetNSPath(n2.NetNS), "http://"+lbIP+":80/hostname", 15*time.Second); err != nil || !strings.HasPrefix(got, "web-") {
		t.Errorf("node-2 → load balancer %s = %q, %v", lbIP, got, err)
	}

	// A rolling update with maxUnavailable 0: the Service never has fewer than 4 ready endpoints.
	var least atomic.Int64
	least.Store(99)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			if n, err := readyEndpoints(l, "web"); err == nil {
				least.Store(min(least.Load(), int64(n)))
			}
		}
	}()
	kubectl("set", "env", "deployment/web", "GENERATION=2")
	kubectl("rollout", "status", "deployment/web", "--timeout=180s")
	close(stop)
	<-sampled
	if n := least.Load(); n < 4 {
		t.Errorf("ready endpoints fell to %d during the rolling update; want never below 4", n)
	}
	kubectl("rollout", "undo", "deployment/web")
	kubectl("rollout", "status", "deployment/web", "--timeout=180s")
	if out := kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].env}"); strings.Contains(out, "GENERATION") {
		t.Errorf("after rollout undo the template still has the new env: %s", out)
	}
	waitReadyEndpoints(t, l, "web", 4)
	if got, err := getEventually(lab.NetNSPath(n2.NetNS), clusterURL, 15*time.Second); err != nil || !strings.HasPrefix(got, "web-") {
		t.Errorf("node-2 → %s after the rollouts = %q, %v", clusterURL, got, err)
	}
}

// readyEndpoints counts the ready endpoints in the Service's EndpointSlices.
func readyEndpoints(l *lab.Lab, svc string) (int, error) {
	out, err := cluster.Kubectl(context.Background(), l, "get", "endpointslices", "-l", "kubernetes.io/service-name="+svc, "-o", "json")
	if err != nil {
		return 0, err
	}
	var list discoveryv1.EndpointSliceList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return 0, err
	}
	n := 0
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				n++
			}
		}
	}
	return n, nil
}

func waitReadyEndpoints(t *testing.T, l *lab.Lab, svc string, want int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := readyEndpoints(l, svc)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s has %d ready endpoints (%v), want %d", svc, n, err, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// runningPod finds a Running pod of app and the lab node it runs on.
func runningPod(t *testing.T, l *lab.Lab, app string) (corev1.Pod, lab.Node) {
	t.Helper()
	for _, p := range appPods(t, l, app) {
		for _, n := range l.Nodes {
			if p.Spec.NodeName == n.Name && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				return p, n
			}
		}
	}
	t.Fatalf("no Running %s pod", app)
	return corev1.Pod{}, lab.Node{}
}

// getEventually retries a GET from a namespace for a bounded time (rules and endpoints
// propagate within a sync period) and returns the last answer.
func getEventually(netns, url string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		got, err := httpGetIn(netns, url)
		if err == nil || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(300 * time.Millisecond)
	}
}

const refusedApp = `apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  nodeName: node-1
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
---
` + nobodyService

// TestPodRefusedByServiceWithoutEndpoints: a pod connecting to a ClusterIP without
// endpoints is refused at once (miniproxy's REJECT in filter KUBE-SERVICES, reached from
// FORWARD), as on a kube-proxy node, also after minilet wrote its FORWARD rules again
// with miniproxy's already in place.
func TestPodRefusedByServiceWithoutEndpoints(t *testing.T) {
	l := upLab(t, "e2e-refuse", 1)
	ctx := context.Background()
	applyYAML(t, l, refusedApp)
	pod := waitRunning(t, l, "client")
	n := l.Nodes[0]
	podNS := filepath.Join(n.RunDir, "netns", string(pod.UID))
	url := "http://" + strings.TrimSpace(mustKubectl(t, l, "get", "service", "nobody", "-o", "jsonpath={.spec.clusterIP}")) + ":80/"
	filter := func() string {
		out, err := lab.Command(ctx, n.NetNS, "iptables-save", "-t", "filter").CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-save: %v: %s", err, out)
		}
		return string(out)
	}
	refused := func(when string) {
		t.Helper()
		waitFor(t, "miniproxy's REJECT for default/nobody and minilet's FORWARD rules", 30*time.Second, func() (bool, string) {
			f := filter()
			return strings.Contains(f, "default/nobody has no endpoints") && strings.Contains(f, "-j MINIK8S-FORWARD"), f
		})
		for i := range 3 {
			start := time.Now()
			_, err := httpGetIn(podNS, url)
			if took := time.Since(start); !errors.Is(err, syscall.ECONNREFUSED) || took > 500*time.Millisecond {
				t.Fatalf("%s, try %d: pod → %s: %v after %v; want connection refused at once. FORWARD:\n%s",
					when, i+1, url, err, took, filter())
			}
		}
	}
	refused("after the lab came up")

	// minilet writing its FORWARD jump while miniproxy's are there (minilet starting
	// second, or after its rules were removed) must not put it above them.
	out, err := lab.Command(ctx, n.NetNS, "iptables", "-D", "FORWARD", "-m", "comment", "--comment", "minik8s pod egress", "-j", "MINIK8S-FORWARD").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -D: %v: %s", err, out)
	}
	if _, err := l.Restart("minilet-"+n.Name, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	refused("after a minilet restart")
}

const localhostNodePortApp = `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30081}]
`

// TestNodePortOnLocalhost: inside a node, 127.0.0.1:NODEPORT answers, as with kube-proxy's
// iptables mode (--iptables-localhost-nodeports, on by default: route_localnet=1, the
// masquerade of the external chain, KUBE-FIREWALL's drop of martians to 127.0.0.0/8).
func TestNodePortOnLocalhost(t *testing.T) {
	l := upLab(t, "e2e-lnp", 1)
	ctx := context.Background()
	applyYAML(t, l, localhostNodePortApp)
	waitRunning(t, l, "web")
	waitReadyEndpoints(t, l, "web", 1)
	n := l.Nodes[0]
	nodeNS := lab.NetNSPath(n.NetNS)
	// The node's own address answers first (the rules are in place) ...
	if got, err := getEventually(nodeNS, fmt.Sprintf("http://%s:30081/hostname", n.IP), 15*time.Second); err != nil || got != "web" {
		t.Fatalf("node-1 → its own address's NodePort = %q, %v", got, err)
	}
	// ... and so does loopback.
	if got, err := httpGetIn(nodeNS, "http://127.0.0.1:30081/hostname"); err != nil || got != "web" {
		out, _ := lab.Command(ctx, n.NetNS, "sh", "-c", "sysctl net.ipv4.conf.all.route_localnet; iptables-save").CombinedOutput()
		t.Fatalf("node-1 → 127.0.0.1:30081 = %q, %v\n%s", got, err, out)
	}
	out, err := lab.Command(ctx, n.NetNS, "iptables-save", "-t", "filter").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-A INPUT -j KUBE-FIREWALL", "-A OUTPUT -j KUBE-FIREWALL",
		`-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("node-1's filter table lacks %q:\n%s", want, out)
		}
	}
}

const preferCloseApp = `apiVersion: v1
kind: Pod
metadata: {name: web-a, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-b, labels: {app: web}}
spec:
  nodeName: node-2
  containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  trafficDistribution: PreferClose
  ports: [{port: 80, targetPort: 8080}]
`

// TestTrafficDistributionPreferClose follows the Kubernetes docs' Traffic Distribution:
// nodes in zones a and b, an endpoint in each, and each node's traffic to the ClusterIP
// stays in its zone (the endpointslice controller's hints, miniproxy's filtering); once
// zone b has no endpoint, node-2 falls back to zone a's.
func TestTrafficDistributionPreferClose(t *testing.T) {
	l := upLab(t, "e2e-topo", 2)
	mustKubectl(t, l, "label", "node", "node-1", "topology.kubernetes.io/zone=a")
	mustKubectl(t, l, "label", "node", "node-2", "topology.kubernetes.io/zone=b")
	applyYAML(t, l, preferCloseApp)
	waitReadyEndpoints(t, l, "web", 2)
	url := "http://" + strings.TrimSpace(mustKubectl(t, l, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")) + ":80/hostname"
	// answers are what ten GETs from node n answered, deduplicated and sorted.
	answers := func(n lab.Node) string {
		seen := map[string]bool{}
		for range 10 {
			got, err := httpGetIn(lab.NetNSPath(n.NetNS), url)
			if err != nil {
				got = err.Error()
			}
			seen[got] = true
		}
		var out []string
		for a := range seen {
			out = append(out, a)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	for n, want := range map[int]string{0: "web-a", 1: "web-b"} {
		waitFor(t, l.Nodes[n].Name+" reaching only its zone's endpoint", 30*time.Second, func() (bool, string) {
			got := answers(l.Nodes[n])
			return got == want, got + "\n" + mustKubectl(t, l, "get", "endpointslices", "-o", "yaml")
		})
	}
	mustKubectl(t, l, "delete", "pod", "web-b", "--grace-period=0")
	waitFor(t, "node-2 falling back to zone a's endpoint", 30*time.Second, func() (bool, string) {
		got := answers(l.Nodes[1])
		return got == "web-a", got
	})
}
