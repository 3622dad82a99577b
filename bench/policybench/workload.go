package main

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

const (
	nodeName = "policybench-node"
	// nodeIP is the node's InternalIP and every pod's hostIP: kube-router takes the pods
	// whose status.hostIP is its node's address as its own.
	nodeIP = "198.51.100.10"
	// peerLabel is used by one peer selector only (the watched rule): adding it to a pod
	// changes one set's members and nothing else, in either controller.
	peerLabel = "bench-peer"
	apps      = 10
)

// workload is what the API holds: namespaces, pods on the benchmark node, policies. The
// first namespace's first pod is the marker (only peerLabel), its second the pod whose
// labels change; its first policy is the watched one.
type workload struct {
	namespaces []*corev1.Namespace
	pods       []*corev1.Pod
	policies   []*networkingv1.NetworkPolicy
}

func newWorkload(nNamespaces, nPods, nPolicies int) *workload {
	w := &workload{}
	for i := range nNamespaces {
		name := fmt.Sprintf("pb-%02d", i)
		w.namespaces = append(w.namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/metadata.name": name, "team": fmt.Sprintf("team-%d", i%5), "env": []string{"prod", "dev"}[i%2]}}})
	}
	for i := range nPods {
		ns := w.namespaces[i%nNamespaces].Name
		j := i / nNamespaces // index in its namespace
		lbls := map[string]string{"app": fmt.Sprintf("app-%d", j%apps), "tier": []string{"web", "api", "db"}[j%3], "version": fmt.Sprintf("v%d", j%2)}
		if i == 0 {
			lbls = map[string]string{peerLabel: "yes"}
		}
		w.pods = append(w.pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pod-" + strconv.Itoa(j), Namespace: ns, Labels: lbls},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
				Name: "app", Image: "localhost/minik8s/netexec:v1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}, {Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP}},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: nodeIP, HostIPs: []corev1.HostIP{{IP: nodeIP}},
				PodIP: podIP(i), PodIPs: []corev1.PodIP{{IP: podIP(i)}}},
		})
	}
	for i := range nPolicies {
		ns := w.namespaces[i%nNamespaces].Name
		w.policies = append(w.policies, netpol(ns, i/nNamespaces, i == 0))
	}
	return w
}

func podIP(i int) string { return fmt.Sprintf("10.64.%d.%d", i/250, i%250+2) }

// netpol is the k-th policy of namespace ns: a mix of pod, namespace and ipBlock peers,
// numbered, ranged and named ports, ingress and (every third) egress.
func netpol(ns string, k int, watched bool) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("np-%d", k), Namespace: ns}}
	if watched {
		np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{peerLabel: "yes"}}}}}}
		return np
	}
	app := fmt.Sprintf("app-%d", k%apps)
	np.Spec.PodSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if k%4 == 1 {
		np.Spec.PodSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}
	}
	tcp, udp := ptr.To(corev1.ProtocolTCP), ptr.To(corev1.ProtocolUDP)
	port := func(p intstr.IntOrString, proto *corev1.Protocol) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: &p, Protocol: proto}
	}
	np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{
		{
			From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}},
			Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(8080), tcp), port(intstr.FromString("http"), tcp)},
		},
		{
			From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": fmt.Sprintf("team-%d", k%5)}},
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", (k+1)%apps)}}},
				{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.64.0.0/16"}}},
			},
			Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromString("metrics"), tcp), {Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](9100), Protocol: tcp}},
		},
	}
	if k%3 == 0 {
		np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{
			{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(5432), tcp), port(intstr.FromString("metrics"), tcp)},
			},
			{
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "pb-00"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromString("dns"), udp), port(intstr.FromInt32(53), tcp)},
			},
			{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"169.254.0.0/16", "10.0.0.0/8"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(443), tcp)},
			},
		}
	}
	return np
}

// expected counts what a complete ruleset holds: our chains (one per pod and direction
// some policy selects it in) and kube-router's pod chains (one per local pod).
func (w *workload) expected() (ours, kubeRouter int) {
	type sel struct {
		ns      string
		s       labels.Selector
		in, egr bool
	}
	var sels []sel
	for _, np := range w.policies {
		s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			panic(err)
		}
		x := sel{ns: np.Namespace, s: s}
		for _, t := range np.Spec.PolicyTypes {
			x.in = x.in || t == networkingv1.PolicyTypeIngress
			x.egr = x.egr || t == networkingv1.PolicyTypeEgress
		}
		sels = append(sels, x)
	}
	for _, p := range w.pods {
		var in, egr bool
		for _, s := range sels {
			if s.ns == p.Namespace && s.s.Matches(labels.Set(p.Labels)) {
				in, egr = in || s.in, egr || s.egr
			}
		}
		if in {
			ours++
		}
		if egr {
			ours++
		}
	}
	return ours, len(w.pods)
}
