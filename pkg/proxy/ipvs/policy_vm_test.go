package ipvs

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/vmtest"
	"github.com/minik8s/minik8s/pkg/network/policy"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestNetworkPolicyAfterIPVSInVM: in IPVS mode a pod's connection to a Service meets INPUT
// on the cluster IP (or the node's address, for a node port), and IPVS sends it translated
// on through OUTPUT, never FORWARD. The policy controller decides it there, after the
// translation: a pod whose egress is denied cannot reach the Service whose endpoint it
// reached before, another pod still can, an egress rule allowing the endpoint allows both
// the cluster IP and the node port, and the endpoint's own ingress policy (same node) is
// applied; the node itself still reaches the endpoint through the Service.
func TestNetworkPolicyAfterIPVSInVM(t *testing.T) {
	if !vmtest.InVM() {
		o := vmOptions(t, 1024, 8*time.Minute)
		o.Modules = append(o.Modules, "xt_ipvs")
		vmtest.RunTest(t, o)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelWarn}))
	web := startBackend(t, "b1", 1)                               // x/web, the Service's endpoint
	client := startBackend(t, "c3", 3)                            // x/client
	other := startBackend(t, "c4", 4)                             // x/other
	const clusterIP, nodePort = "10.96.0.10:80", "10.0.3.1:30080" // the node port on the client's gateway address

	svcs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	slices := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	svc := service("web", "10.96.0.10", corev1.ProtocolTCP, 80, 30080, 0)
	must(t, svcs.Add(svc))
	must(t, slices.Add(slice("web", corev1.ProtocolTCP, 8080, web)))
	// The pods' range: their connections to the cluster IP are not masqueraded.
	p, err := New(Config{ClusterCIDR: "10.0.0.0/16"}, corelisters.NewServiceLister(svcs), discoverylisters.NewEndpointSliceLister(slices), "vm", log)
	must(t, err)
	defer p.Close()
	if _, err := p.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	// The API the policy controller reads: the three pods on this node, the Service range
	// and the Service (its node port).
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
			Spec:   corev1.PodSpec{NodeName: "vm"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	kube := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"ns": "x"}}},
		pod("web", web), pod("client", client), pod("other", other),
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}},
		svc)
	f := informers.NewSharedInformerFactory(kube, 0)
	ctrl := policy.NewController(f, policy.Informers{
		Pods: f.Core().V1().Pods(), Namespaces: f.Core().V1().Namespaces(),
		NetworkPolicies: f.Networking().V1().NetworkPolicies(), ServiceCIDRs: f.Networking().V1().ServiceCIDRs(),
		Services: f.Core().V1().Services(),
	}, "vm", log)
	ctrlCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctrlCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("policy controller: %v", err)
		}
	}()

	reaches := func(what, from, to string, want bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
			return (dialFrom(from, to) == "b1") == want, nil
		})
		if err != nil {
			t.Errorf("%s: %s reaching %s is not %v", what, from, to, want)
		}
	}
	reaches("no policy", client, clusterIP, true)
	reaches("no policy", client, nodePort, true)
	reaches("no policy", other, clusterIP, true)

	nps := kube.NetworkingV1().NetworkPolicies("x")
	create := func(np *networkingv1.NetworkPolicy) {
		t.Helper()
		if _, err := nps.Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	selects := func(app string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	create(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "client-deny-egress"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: selects("client"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}})
	reaches("egress deny-all on x/client", client, clusterIP, false)
	reaches("egress deny-all on x/client", client, nodePort, false)
	reaches("egress deny-all on x/client", other, clusterIP, true)

	// Allowed to the endpoint's pods on its port: the Service, decided on the endpoint after
	// IPVS, passes, through the cluster IP and the node port alike.
	create(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "client-to-web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: selects("client"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: ptr.To(selects("web"))}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8080))}},
			}}}})
	reaches("egress to x/web on 8080", client, clusterIP, true)
	reaches("egress to x/web on 8080", client, nodePort, true)

	// The endpoint's ingress, on the same node: from x/client only.
	create(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "web-from-client"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: selects("web"), PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: ptr.To(selects("client"))}}}}}})
	reaches("ingress of x/web from x/client only", other, clusterIP, false)
	reaches("ingress of x/web from x/client only", client, clusterIP, true)
	if got := answers(t, clusterIP, 1); !got["b1"] {
		t.Errorf("ingress of x/web from x/client only: the node itself reaching %s got %v, want b1", clusterIP, got)
	}

	// What decided is counted where it decided: OUTPUT's first rule is our jump, and there
	// the jumps to x/client's egress and x/web's ingress chains, and x/web's DROP, counted.
	saved := run(t, "iptables-save", "-c", "-t", "filter")
	t.Logf("filter table:\n%s", saved)
	if out := run(t, "iptables", "-S", "OUTPUT"); !strings.HasSuffix(strings.Split(out, "\n")[1], "-j "+policy.OutputChain) {
		t.Errorf("OUTPUT does not start with the jump to %s:\n%s", policy.OutputChain, out)
	}
	for _, re := range []string{
		`\[[1-9]\d*:\d+\] -A ` + policy.OutputChain + ` -s ` + client + `/32 -m comment --comment "x/client egress" -j MKNP-E-`,
		`\[[1-9]\d*:\d+\] -A ` + policy.OutputChain + ` -d ` + web + `/32 -m comment --comment "x/web ingress" -j MKNP-I-`,
		`\[[1-9]\d*:\d+\] -A MKNP-I-\S+ -m comment --comment "x/web ingress denied" -j DROP`,
	} {
		if !regexp.MustCompile(re).MatchString(saved) {
			t.Errorf("no counted rule like %s", re)
		}
	}

	// minilet --network-policy=false (Cleanup): nothing of ours left, OUTPUT's jump too.
	stop()
	if err := <-done; err != nil {
		t.Errorf("policy controller: %v", err)
	}
	done <- nil
	must(t, policy.Cleanup(ctx))
	if out := run(t, "iptables-save", "-t", "filter"); strings.Contains(out, policy.TopChain) || strings.Contains(out, "MKNP-") {
		t.Errorf("left after Cleanup:\n%s", out)
	}
	reaches("no policy after Cleanup", other, clusterIP, true)
}

// dialFrom connects from the namespace of backend ip (startBackend's) to addr and returns
// the first line answered ("" when none).
func dialFrom(ip, addr string) string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return ""
	}
	defer orig.Close()
	if err := netns.Set(backendNS[ip]); err != nil {
		return ""
	}
	c, err := net.DialTimeout("tcp", addr, time.Second) // the socket is made in that namespace
	if err := netns.Set(orig); err != nil {
		panic(err) // this thread must not go back to the pool elsewhere
	}
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}
