package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/proxy/explain"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

const explainApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: explained}
spec:
  replicas: 2
  selector: {matchLabels: {app: explained}}
  template:
    metadata: {labels: {app: explained}}
    spec:
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: explained}
spec:
  selector: {app: explained}
  ports: [{name: http, port: 80, targetPort: http}]
`

var sepChain = regexp.MustCompile(`^KUBE-SEP-[A-Z2-7]{16}$`)

// TestExplainNamesTheSEPChains: `minilab explain` on a node names the KUBE-SEP chains a
// packet to a ClusterIP can reach — one per ready endpoint, each DNATing to it, each a chain
// the node's nat table really holds — and counts the packets sent through them.
func TestExplainNamesTheSEPChains(t *testing.T) {
	e := testenv.RequireBuilt(t)
	l := upLab(t, "e2e-explain", 2)
	applyYAML(t, l, explainApp)
	mustKubectl(t, l, "rollout", "status", "deployment/explained", "--timeout=120s")
	waitReadyEndpoints(t, l, "explained", 2)
	var svc corev1.Service
	kubectlJSON(t, l, &svc, "get", "service", "explained")
	var slices discoveryv1.EndpointSliceList
	kubectlJSON(t, l, &slices, "get", "endpointslices", "-l", "kubernetes.io/service-name=explained")
	var want []string
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			want = append(want, ep.Addresses[0]+":8080")
		}
	}
	sort.Strings(want)

	n1 := l.Nodes[0]
	explainJSON := func() ([]explain.Path, []byte) {
		t.Helper()
		out, err := exec.Command(filepath.Join(e.BinDir, "minilab"), "--name", l.Name, "explain", n1.Name,
			"--service", "default/explained", "--port", "80", "--from", n1.IP, "-o", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("minilab explain: %v\n%s", err, out)
		}
		var paths []explain.Path
		if err := json.Unmarshal(out, &paths); err != nil {
			t.Fatalf("explain -o json: %v\n%s", err, out)
		}
		return paths, out
	}
	// miniproxy syncs at most once a --min-sync-period (1 s): the second endpoint may reach
	// node-1's rules a sync after the slice lists it. Traffic goes once both are there.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if paths, _ := explainJSON(); len(paths) == 1 && len(paths[0].Endpoints) == len(want) || time.Now().After(deadline) {
			break
		}
	}
	url := fmt.Sprintf("http://%s:80/hostname", svc.Spec.ClusterIP)
	if got, err := getEventually(lab.NetNSPath(n1.NetNS), url, 15*time.Second); err != nil {
		t.Fatalf("node-1 → %s: %q %v", url, got, err)
	}
	for range 5 {
		if _, err := httpGetIn(lab.NetNSPath(n1.NetNS), url); err != nil {
			t.Fatal(err)
		}
	}

	paths, out := explainJSON()
	if len(paths) != 1 || paths[0].Kind != "cluster IP" || paths[0].DstIP != svc.Spec.ClusterIP {
		t.Fatalf("explain answered %d paths, want the cluster IP's:\n%s", len(paths), out)
	}
	p := paths[0]
	save, err := lab.Command(context.Background(), n1.NetNS, "iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var packets uint64
	for _, ep := range p.Endpoints {
		if !sepChain.MatchString(ep.Chain) || !strings.Contains(string(save), ":"+ep.Chain+" ") {
			t.Errorf("explain names %q, not a KUBE-SEP chain of node-1's nat table", ep.Chain)
		}
		if ep.Probability <= 0 || ep.Probability > 1 {
			t.Errorf("%s: probability %v", ep.Chain, ep.Probability)
		}
		got = append(got, ep.DNAT)
		packets += ep.Packets
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("explain's DNAT targets %v, want the ready endpoints %v", got, want)
	}
	if packets < 6 {
		t.Errorf("the KUBE-SEP jumps counted %d packets, want at least the 6 connections just made", packets)
	}
	if len(p.Masquerade) == 0 || !strings.HasPrefix(p.Masquerade[0], "masqueraded") {
		t.Errorf("from the node's own address (outside the cluster CIDR): masquerade %q, want masqueraded", p.Masquerade)
	}
	if p.Verdict != "DNAT to one of 2 endpoints" {
		t.Errorf("verdict %q", p.Verdict)
	}

	// The text form names the same chains.
	text, err := exec.Command(filepath.Join(e.BinDir, "minilab"), "--name", l.Name, "explain", n1.Name, "--service", "default/explained").CombinedOutput()
	if err != nil {
		t.Fatalf("minilab explain: %v\n%s", err, text)
	}
	t.Logf("minilab explain %s --service default/explained:\n%s", n1.Name, text)
	for _, ep := range p.Endpoints {
		if !strings.Contains(string(text), ep.Chain) {
			t.Errorf("text output lacks %s:\n%s", ep.Chain, text)
		}
	}
}
