package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/network/policy/policytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matrixPod is one of the netpol matrix's pods as the lab runs it.
type matrixPod struct {
	key, name, ip, netns string
	node                 int // index in l.Nodes
}

// netpolPods are x/a ... z/c, pod a on node-1, b on node-2, c on node-3: each serves TCP
// (HTTP) and UDP on 80 and 81 with two netexec containers, and declares the named ports.
func netpolPods(l *lab.Lab) string {
	var b strings.Builder
	for _, ns := range policytest.Namespaces {
		fmt.Fprintf(&b, "---\n{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": %q, \"labels\": {\"ns\": %q}}}\n", ns, ns)
	}
	for _, key := range policytest.PodKeys() {
		ns, name, _ := strings.Cut(key, "/")
		node := l.Nodes[strings.Index("abc", name)%len(l.Nodes)].Name
		serve := func(port int) corev1.Container {
			p := strconv.Itoa(port)
			return corev1.Container{Name: "serve-" + p, Image: "localhost/minik8s/netexec:v1",
				Args: []string{"--http-port=" + p, "--udp-port=" + p, "--grpc-port=0"}}
		}
		c80, c81 := serve(80), serve(81)
		c80.Ports = policytest.ContainerPorts()
		pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"pod": name}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{c80, c81}}}
		j, _ := json.Marshal(pod)
		fmt.Fprintf(&b, "---\n%s\n", j)
	}
	return b.String()
}

// netpolProbe reports whether from reaches to on pr within about a second: the HTTP
// /hostname or the UDP "hostname" answer must name to.
func netpolProbe(from, to *matrixPod, pr policytest.Probe) bool {
	request := "GET /hostname HTTP/1.0\r\n\r\n"
	if pr.Proto == corev1.ProtocolUDP {
		request = "hostname"
	}
	got, err := policytest.Exchange(from.netns, to.ip, pr, []byte(request))
	if err != nil {
		return false
	}
	if pr.Proto == corev1.ProtocolUDP {
		return strings.TrimSpace(string(got)) == to.name
	}
	return strings.HasSuffix(strings.TrimSpace(string(got)), "\r\n\r\n"+to.name)
}

// observeMatrix probes every ordered pair of distinct pods on pr, 24 at a time.
func observeMatrix(pods []*matrixPod, pr policytest.Probe) policytest.Reachability {
	r := policytest.Matrix(false)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 24)
	for _, f := range pods {
		for _, to := range pods {
			if f == to {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				ok := netpolProbe(f, to, pr)
				<-sem
				mu.Lock()
				r[f.key][to.key] = ok
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return r
}

var xaDropCounter = regexp.MustCompile(`\[(\d+):\d+\] -A MKNP-I-\S+ -m comment --comment "x/a ingress denied" -j DROP`)

// TestNetworkPolicyMatrix runs the netpol e2e's cases (pkg/network/policy/policytest) on a
// 3-node minilab in iptables proxy mode: real pods a, b, c of namespaces x, y, z spread
// over the three nodes, policies applied with kubectl, each case's matrix probed from inside
// every source pod's network namespace and compared with the expected one.
func TestNetworkPolicyMatrix(t *testing.T) {
	start := time.Now()
	l := upLab(t, "e2e-netpol", 3)
	applyYAML(t, l, netpolPods(l))
	for _, ns := range policytest.Namespaces {
		mustKubectl(t, l, "wait", "--for=condition=Ready", "pod", "--all", "-n", ns, "--timeout=180s")
	}
	var list corev1.PodList
	kubectlJSON(t, l, &list, "get", "pods", "-A", "-l", "pod")
	byKey := map[string]*matrixPod{}
	for i := range list.Items {
		p := &list.Items[i]
		node := -1
		for j, n := range l.Nodes {
			if n.Name == p.Spec.NodeName {
				node = j
			}
		}
		if node < 0 || p.Status.PodIP == "" {
			t.Fatalf("pod %s/%s on %q with IP %q", p.Namespace, p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
		byKey[p.Namespace+"/"+p.Name] = &matrixPod{key: p.Namespace + "/" + p.Name, name: p.Name, ip: p.Status.PodIP, node: node, netns: podNetNS(l, node, p)}
	}
	var pods []*matrixPod
	for _, key := range policytest.PodKeys() {
		if byKey[key] == nil {
			t.Fatalf("pod %s is missing", key)
		}
		pods = append(pods, byKey[key])
	}
	t.Logf("lab up and 9 pods ready in %v", time.Since(start).Round(time.Second))

	ctx := context.Background()
	cases := policytest.Cases(lab.ClusterCIDR, func(key string) string { return byKey[key].ip })
	matrixStart := time.Now()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.AcceptFirstInForward {
				for _, n := range l.Nodes {
					if out, err := lab.Command(ctx, n.NetNS, "iptables", "-I", "FORWARD", "1", "-j", "ACCEPT").CombinedOutput(); err != nil {
						t.Fatalf("%s: %v %s", n.Name, err, out)
					}
				}
			}
			if r := tc.Relabel; r != nil {
				args := []string{"label", "pod", "-n", r.NS, r.Name, "--overwrite"}
				for k, v := range r.Labels {
					args = append(args, k+"="+v)
				}
				mustKubectl(t, l, args...)
			}
			if len(tc.Policies) > 0 {
				var b strings.Builder
				for _, np := range tc.Policies {
					np := np.DeepCopy()
					np.APIVersion, np.Kind = "networking.k8s.io/v1", "NetworkPolicy"
					j, _ := json.Marshal(np)
					fmt.Fprintf(&b, "---\n%s\n", j)
				}
				applyYAML(t, l, b.String())
			}
			for pr, want := range tc.Expect {
				var d []string
				for round := range 4 {
					time.Sleep(time.Duration(round) * 700 * time.Millisecond)
					if d = want.Diff(observeMatrix(pods, pr)); len(d) == 0 {
						break
					}
				}
				if len(d) > 0 {
					t.Errorf("%s on %s: %d pairs differ:\n%s", tc.Name, pr, len(d), strings.Join(d, "\n"))
				}
			}
			if tc.CheckNodeAndDrops {
				xa := byKey["x/a"]
				n := l.Nodes[xa.node]
				if !netpolProbe(&matrixPod{netns: lab.NetNSPath(n.NetNS)}, xa, policytest.TCP80) {
					t.Errorf("%s cannot reach x/a under a default deny", n.Name)
				}
				out, err := lab.Command(ctx, n.NetNS, "iptables-save", "-c", "-t", "filter").Output()
				if err != nil {
					t.Fatal(err)
				}
				if m := xaDropCounter.FindSubmatch(out); m == nil || string(m[1]) == "0" {
					t.Errorf("no counted drop for x/a's ingress on %s:\n%s", n.Name, out)
				}
			}
			if !tc.Keep {
				for _, ns := range policytest.Namespaces {
					mustKubectl(t, l, "delete", "networkpolicies", "--all", "-n", ns)
				}
				r := policytest.Restore
				mustKubectl(t, l, "label", "pod", "-n", r.NS, r.Name, "--overwrite", "pod="+r.Labels["pod"])
			}
		})
	}
	t.Logf("%d cases in %v (whole test %v)", len(cases), time.Since(matrixStart).Round(time.Second), time.Since(start).Round(time.Second))
}
