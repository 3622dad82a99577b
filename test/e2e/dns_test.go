package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

const dnsApp = `apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-headless, namespace: shop}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: default}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: sh, image: localhost/minik8s/dnsutils:v1, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop}
spec:
  terminationGracePeriodSeconds: 0
  containers: [{name: sh, image: localhost/minik8s/dnsutils:v1, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: custom, namespace: shop}
spec:
  terminationGracePeriodSeconds: 0
  dnsPolicy: None
  dnsConfig:
    nameservers: [10.96.0.10]
    searches: [svc.cluster.local]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  hostAliases: [{ip: 192.0.2.7, hostnames: [db.example, db]}]
  containers: [{name: sh, image: localhost/minik8s/dnsutils:v1, command: [sleep, "3600"]}]
`

// TestClusterDNS: CoreDNS, unmodified, serves the cluster's names from miniapi's Services
// and EndpointSlices; minilet gives pods a resolv.conf that points at it. Its two replicas
// run on different nodes, so lookups keep working when one node stops.
func TestClusterDNS(t *testing.T) {
	l := upLabWith(t, "e2e-dns", cluster.Options{Nodes: 2, DNS: true})
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	// Two replicas, one per node: kubeadm's preferred anti-affinity on the hostname.
	dnsNodes := strings.Fields(kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[*].spec.nodeName}"))
	if len(dnsNodes) != 2 || dnsNodes[0] == dnsNodes[1] {
		t.Errorf("CoreDNS replicas on nodes %v, want two on different nodes", dnsNodes)
	}
	applyYAML(t, l, dnsApp)
	kubectl("-n", "shop", "rollout", "status", "deployment/web", "--timeout=120s")
	kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	kubectl("-n", "shop", "wait", "--for=condition=Ready", "pod/client", "pod/custom", "--timeout=120s")
	var svc corev1.Service
	if err := json.Unmarshal([]byte(kubectl("-n", "shop", "get", "service", "web", "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(kubectl("-n", "shop", "get", "pods", "-l", "app=web", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	var webIPs []string
	for _, p := range pods.Items {
		webIPs = append(webIPs, p.Status.PodIP)
	}

	// What minilet wrote, as the kubelet would (the node's search domains may follow).
	resolv := kubectl("exec", "client", "--", "cat", "/etc/resolv.conf")
	if lines := strings.Split(strings.TrimSpace(resolv), "\n"); len(lines) != 3 ||
		!strings.HasPrefix(lines[0], "search default.svc.cluster.local svc.cluster.local cluster.local") ||
		lines[1] != "nameserver 10.96.0.10" || lines[2] != "options ndots:5" {
		t.Errorf("client's /etc/resolv.conf:\n%s", resolv)
	}
	if got, want := kubectl("-n", "shop", "exec", "custom", "--", "cat", "/etc/resolv.conf"),
		"search svc.cluster.local\nnameserver 10.96.0.10\noptions edns0 ndots:2\n"; got != want {
		t.Errorf("dnsPolicy None pod's /etc/resolv.conf:\n%s\nwant:\n%s", got, want)
	}
	hosts := kubectl("-n", "shop", "exec", "custom", "--", "cat", "/etc/hosts")
	if !strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.\n") || !strings.Contains(hosts, "\tcustom\n") ||
		!strings.Contains(hosts, "192.0.2.7\tdb.example\tdb\n") {
		t.Errorf("custom's /etc/hosts:\n%s", hosts)
	}

	// Names resolve through CoreDNS: short names by the search list, across namespaces,
	// the API's own Service, and a headless Service to its pods.
	lookup := func(ns, pod, name string, want ...string) {
		t.Helper()
		var out string
		waitFor(t, fmt.Sprintf("%s/%s: nslookup %s to give %v", ns, pod, name, want), 30*time.Second, func() (bool, string) {
			var err error
			out, err = cluster.Kubectl(context.Background(), l, "-n", ns, "exec", pod, "--", "nslookup", name)
			if err != nil {
				return false, out
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return false, out
				}
			}
			return strings.Contains(out, "10.96.0.10"), out
		})
	}
	lookup("default", "client", "kubernetes.default", "10.96.0.1")
	lookup("default", "client", "web.shop", svc.Spec.ClusterIP)
	lookup("shop", "client", "web", svc.Spec.ClusterIP)
	lookup("shop", "custom", "web.shop", svc.Spec.ClusterIP)
	lookup("default", "client", "web-headless.shop.svc.cluster.local", webIPs...)
	if out, err := cluster.Kubectl(context.Background(), l, "exec", "client", "--", "nslookup", "nosuch.shop.svc.cluster.local"); err == nil || !strings.Contains(out, "NXDOMAIN") {
		t.Errorf("a name of no Service: want NXDOMAIN, got %v:\n%s", err, out)
	}
	// The cluster's zone is not cached (kubeadm's Corefile): the Service created right after
	// that NXDOMAIN resolves within seconds, and is NXDOMAIN again as soon as it is deleted,
	// not 30 s later when a cached answer expires.
	kubectl("-n", "shop", "create", "service", "clusterip", "nosuch", "--tcp=80:80")
	nosuchIP := kubectl("-n", "shop", "get", "service", "nosuch", "-o", "jsonpath={.spec.clusterIP}")
	waitFor(t, "a new Service to resolve at once", 8*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, "exec", "client", "--", "nslookup", "nosuch.shop.svc.cluster.local")
		return err == nil && strings.Contains(out, nosuchIP), out
	})
	// Asked again and again, so that both CoreDNS replicas would have cached the answer,
	// the deleted Service must be NXDOMAIN at each of several lookups in a row.
	for range 6 {
		kubectl("exec", "client", "--", "nslookup", "nosuch.shop.svc.cluster.local")
	}
	kubectl("-n", "shop", "delete", "service", "nosuch")
	gone := 0
	waitFor(t, "a deleted Service to be NXDOMAIN at once, 6 lookups in a row", 15*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, "exec", "client", "--", "nslookup", "nosuch.shop.svc.cluster.local")
		if err != nil && strings.Contains(out, "NXDOMAIN") {
			gone++
		} else {
			gone = 0
		}
		return gone == 6, out
	})

	// A pod reaches a Service by its name: busybox's nc resolves it through the C library,
	// which follows the pod's search list like every program in the pod.
	var answer string
	waitFor(t, "a pod to GET http://web.shop/hostname", 30*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, "exec", "client", "--", "sh", "-c",
			`printf 'GET /hostname HTTP/1.0\r\nHost: web.shop\r\n\r\n' | nc -w 5 web.shop 80`)
		answer = out
		return err == nil && strings.Contains(strings.SplitN(out, "\n", 2)[0], " 200 "), out
	})
	if !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return strings.HasSuffix(strings.TrimSpace(answer), "\n"+p.Name) }) {
		t.Errorf("web.shop answered %q, not with one of the web pods' names", answer)
	}

	// Names outside the cluster: CoreDNS forwards them to its node's resolver (dnsPolicy
	// Default), which minilab points at the lab's upstream DNS server; a name nobody serves
	// is NXDOMAIN from there at once, with no loop back into CoreDNS.
	lookup("default", "client", "host.example.test", lab.ControlPlaneIP)
	// CoreDNS's image has nothing but CoreDNS: read its resolv.conf where minilet wrote it.
	where := strings.Fields(kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[0].spec.nodeName} {.items[0].metadata.uid}"))
	for _, n := range l.Nodes {
		if len(where) == 2 && n.Name == where[0] {
			if got, err := os.ReadFile(filepath.Join(n.RunDir, "pods", where[1], "resolv.conf")); err != nil || string(got) != "nameserver "+lab.UpstreamDNS+"\n" {
				t.Errorf("CoreDNS's resolv.conf %q (%v), want its node's: the lab's upstream DNS server", got, err)
			}
		}
	}
	start := time.Now()
	out, err := cluster.Kubectl(context.Background(), l, "exec", "client", "--", "nslookup", "nobody.example.test")
	if took := time.Since(start); err == nil || !strings.Contains(out, "NXDOMAIN") || took > 10*time.Second {
		t.Errorf("a name nobody serves: want NXDOMAIN at once, got %v after %v:\n%s", err, took, out)
	}
	upstream, err := os.ReadFile(filepath.Join(l.StateDir, "logs", cluster.UpstreamDNSProcess+".log"))
	if err != nil || !strings.Contains(string(upstream), "name=host.example.test. type=A rcode=NOERROR") ||
		!strings.Contains(string(upstream), "name=nobody.example.test. type=A rcode=NXDOMAIN") {
		t.Errorf("the upstream DNS server's log lacks the forwarded queries (%v):\n%s", err, upstream)
	}
	if restarts := kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[*].status.containerStatuses[*].restartCount}"); strings.Trim(restarts, "0 ") != "" {
		t.Errorf("CoreDNS restarted (%s times): its loop plugin stops it on a forwarding loop", restarts)
	}

	// The answers came from CoreDNS: its log plugin saw the queries (in either replica).
	logs := kubectl("-n", "kube-system", "logs", "-l", "k8s-app=kube-dns", "--tail=-1")
	for _, q := range []string{"web.shop.svc.cluster.local.", "kubernetes.default.svc.cluster.local.", "web-headless.shop.svc.cluster.local.", "host.example.test."} {
		if !strings.Contains(logs, q) {
			t.Errorf("CoreDNS's log has no query for %s:\n%s", q, logs)
		}
	}

	// The minilet of the node with the replica away from the client dies: lookups from the
	// client keep working through the node's grace period (its replica still runs) and
	// after the node is Unknown and its replica leaves kube-dns's endpoints (the other one
	// answers). With one replica there, they fail from then on for minutes.
	clientNode := kubectl("get", "pod", "client", "-o", "jsonpath={.spec.nodeName}")
	victim := ""
	for _, n := range dnsNodes {
		if n != clientNode {
			victim = n
		}
	}
	if victim == "" {
		t.Fatalf("no CoreDNS replica away from the client's node %s (replicas on %v)", clientNode, dnsNodes)
	}
	if err := l.Stop("minilet-"+victim, 0); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var left time.Time // when victim's replica left the endpoints
	for i := 1; left.IsZero() || time.Since(left) < 10*time.Second; i++ {
		if time.Since(stopped) > 150*time.Second {
			t.Fatalf("%s's CoreDNS replica still a ready kube-dns endpoint %v after its minilet stopped", victim, time.Since(stopped))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := cluster.Kubectl(ctx, l, "exec", "client", "--", "nslookup", "web.shop")
		cancel()
		if err != nil || !strings.Contains(out, svc.Spec.ClusterIP) {
			t.Fatalf("lookup %d, %v after %s's minilet stopped (its replica left the endpoints: %v): %v\n%s",
				i, time.Since(stopped).Round(time.Second), victim, !left.IsZero(), err, out)
		}
		if left.IsZero() {
			eps := kubectl("-n", "kube-system", "get", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns",
				"-o", "jsonpath={range .items[*].endpoints[*]}{.nodeName}={.conditions.ready} {end}")
			if !strings.Contains(eps, victim+"=true") {
				left = time.Now()
				t.Logf("%s's replica left kube-dns's ready endpoints %v after its minilet stopped (%s)", victim, time.Since(stopped).Round(time.Second), eps)
			}
		}
		time.Sleep(time.Second)
	}
}
