package endpointslice_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controllers/endpointslice"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

type podSpec struct {
	name, ip, node string
	ready          bool
	httpPort       int32
	phase          corev1.PodPhase
}

// runPod creates a pod and writes the status a kubelet would.
func runPod(t *testing.T, c kubernetes.Interface, ns, app string, p podSpec) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "img",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: p.httpPort}}}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	phase := p.phase
	if phase == "" {
		phase = corev1.PodRunning
	}
	// The scheduler may write the status of an unbound pod meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.CoreV1().Pods(ns).Get(ctx, p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = corev1.PodStatus{Phase: phase, PodIP: p.ip}
		if p.ip != "" {
			cur.Status.PodIPs = []corev1.PodIP{{IP: p.ip}}
		}
		setReady(cur, p.ready)
		_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setReady(p *corev1.Pod, ready bool) {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.Now()}}
}

func service(name string, publishNotReady bool, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "front"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: ports, PublishNotReadyAddresses: publishNotReady},
	}
}

// slicesState renders the managed slices of a service: "ports|ip:ready/serving/terminating@node/zone ..." sorted.
func slicesState(t *testing.T, c kubernetes.Interface, ns, svc string) []string {
	t.Helper()
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.Labels["tier"] != "front" || metav1.GetControllerOf(&s) == nil {
			t.Errorf("slice %s labels %v owners %v", s.Name, s.Labels, s.OwnerReferences)
		}
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d", *p.Name, *p.Port))
		}
		sort.Strings(ports)
		var eps []string
		for _, e := range s.Endpoints {
			c := e.Conditions
			eps = append(eps, fmt.Sprintf("%s:%v/%v/%v@%s/%s", e.Addresses[0], *c.Ready, *c.Serving, *c.Terminating, ptr.Deref(e.NodeName, ""), ptr.Deref(e.Zone, "")))
		}
		out = append(out, strings.Join(ports, ",")+"|"+strings.Join(eps, " "))
	}
	sort.Strings(out)
	return out
}

func endpointsState(t *testing.T, c kubernetes.Interface, ns, svc string) string {
	ep, err := c.CoreV1().Endpoints(ns).Get(context.Background(), svc, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, ss := range ep.Subsets {
		var s []string
		for _, a := range ss.Addresses {
			s = append(s, "ready:"+a.IP)
		}
		for _, a := range ss.NotReadyAddresses {
			s = append(s, "notready:"+a.IP)
		}
		for _, p := range ss.Ports {
			s = append(s, fmt.Sprintf("%s=%d", p.Name, p.Port))
		}
		sort.Strings(s)
		parts = append(parts, strings.Join(s, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// eventually waits for got to read want, as long as the controllers take on a loaded machine.
func eventually(t *testing.T, what string, got func() string, want string) {
	t.Helper()
	controllertest.Eventually(t, what, 20*time.Second, got, want)
}

// The tests share the package's miniapi, each in a namespace of its own (ns), and run in
// parallel: most of their time is waiting for the controller.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

func TestEndpointSlicesAndEndpointsFollowPods(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-a", 10, map[string]string{corev1.LabelTopologyZone: "zone-1"})
	ports := []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090)},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, service("web", false, ports...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod(t, c, ns, "web", podSpec{name: "a", ip: "10.244.1.1", node: "node-a", ready: true, httpPort: 8080})
	runPod(t, c, ns, "web", podSpec{name: "b", ip: "10.244.1.2", node: "node-a", ready: false, httpPort: 8081})
	runPod(t, c, ns, "web", podSpec{name: "no-ip", httpPort: 8080})
	runPod(t, c, ns, "web", podSpec{name: "done", ip: "10.244.1.9", phase: corev1.PodSucceeded, httpPort: 8080})

	slices := func() string { return strings.Join(slicesState(t, c, ns, "web"), "\n") }
	eventually(t, "slices of web (the named port differs per pod: two slices)", slices,
		"http=8080,metrics=9090|10.244.1.1:true/true/false@node-a/zone-1\nhttp=8081,metrics=9090|10.244.1.2:false/false/false@node-a/zone-1")
	// One subset per set of addresses that offer the same ports, as kube's RepackSubsets.
	eventually(t, "endpoints of web", func() string { return endpointsState(t, c, ns, "web") },
		"http=8080,ready:10.244.1.1 http=8081,notready:10.244.1.2 metrics=9090,notready:10.244.1.2,ready:10.244.1.1")

	// b turns ready; a starts terminating.
	b, _ := c.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{})
	setReady(b, true)
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](300)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "slices after b ready and a terminating", slices,
		"http=8080,metrics=9090|10.244.1.1:false/true/true@node-a/zone-1\nhttp=8081,metrics=9090|10.244.1.2:true/true/false@node-a/zone-1")
	eventually(t, "endpoints without the terminating pod", func() string { return endpointsState(t, c, ns, "web") },
		"http=8081,metrics=9090,ready:10.244.1.2")

	out := cl.MustKubectl(t, "", "get", "endpoints", "web")
	if !strings.Contains(out, "10.244.1.2:8081") || !strings.Contains(out, "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice") {
		t.Errorf("kubectl get endpoints web:\n%s", out)
	}
	out = cl.MustKubectl(t, "", "get", "endpointslices", "-l", "kubernetes.io/service-name=web")
	if !strings.Contains(out, "10.244.1.2") || !strings.Contains(out, "IPv4") {
		t.Errorf("kubectl get endpointslices:\n%s", out)
	}

	// Deleting the Service takes its Endpoints and (by ownership) its slices.
	if err := c.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "slices gone with the service", slices, "")
	eventually(t, "endpoints gone with the service", func() string { return endpointsState(t, c, ns, "web") }, `endpoints "web" not found`)
}

// Ports and subsets are laid out as kube's controllers lay them out: a slice's ports and a
// subset's in the order of their hashes (kube's, recorded from kube-controller-manager 1.36
// for these ports), and an Endpoints subset per set of addresses offering the same ports.
func TestPortsAndSubsetsInKubesOrder(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns, c, ctx := cl.Namespace, cl.Client, context.Background()
	cl.CreateReadyNode(t, "node-o", 10, nil)
	ports := []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		{Name: "metrics", Port: 9090},
		{Name: "grpc", Port: 9000, TargetPort: intstr.FromInt32(9001), AppProtocol: ptr.To("kubernetes.io/h2c")},
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, service("ord", false, ports...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod(t, c, ns, "ord", podSpec{name: "a", ip: "10.244.3.1", node: "node-o", ready: true, httpPort: 8080})
	names := func() string {
		list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=ord"})
		if err != nil || len(list.Items) != 1 {
			return fmt.Sprint(err, list)
		}
		var out []string
		for _, p := range list.Items[0].Ports {
			out = append(out, *p.Name)
		}
		ep, err := c.CoreV1().Endpoints(ns).Get(ctx, "ord", metav1.GetOptions{})
		if err != nil || len(ep.Subsets) != 1 {
			return fmt.Sprint(err, ep)
		}
		out = append(out, "|")
		for _, p := range ep.Subsets[0].Ports {
			out = append(out, p.Name)
		}
		return strings.Join(out, " ")
	}
	eventually(t, "the ports of the slice and of the Endpoints", names, "http dns grpc metrics | http grpc metrics dns")

	// A second pod whose named port differs: the Endpoints split by ports' address sets.
	runPod(t, c, ns, "ord", podSpec{name: "b", ip: "10.244.3.2", node: "node-o", ready: true, httpPort: 8081})
	eventually(t, "endpoints of ord", func() string { return endpointsState(t, c, ns, "ord") },
		"dns=53,grpc=9001,metrics=9090,ready:10.244.3.1,ready:10.244.3.2 http=8080,ready:10.244.3.1 http=8081,ready:10.244.3.2")
}

func TestEndpointSlicesSplitPublishAndLeaveOthersAlone(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	if _, err := c.CoreV1().Services(ns).Create(ctx, service("many", true, corev1.ServicePort{Name: "http", Port: 80}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		runPod(t, c, ns, "many", podSpec{name: fmt.Sprintf("p%03d", i), ip: fmt.Sprintf("10.244.%d.%d", 2+i/200, 1+i%200), httpPort: 80, ready: i%2 == 0})
	}
	// Serving stays the pod's readiness, as kube's podToEndpoint sets it.
	eventually(t, "150 endpoints in slices of at most 100, all ready (publishNotReadyAddresses), the ready pods serving", func() string {
		var sizes []string
		serving, notServing := 0, 0
		for _, s := range slicesState(t, c, ns, "many") {
			eps := strings.Fields(strings.SplitN(s, "|", 2)[1])
			sizes = append(sizes, fmt.Sprint(len(eps)))
			serving += strings.Count(s, ":true/true/false")
			notServing += strings.Count(s, ":true/false/false")
		}
		sort.Strings(sizes)
		return fmt.Sprintf("%v ready and serving=%d, ready not serving=%d", sizes, serving, notServing)
	}, "[100 50] ready and serving=75, ready not serving=75")

	// A Service without selector: its slices are its owner's, never touched.
	manual := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "external"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, manual, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "external-1", Labels: map[string]string{discoveryv1.LabelServiceName: "external", discoveryv1.LabelManagedBy: "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=external"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Endpoints[0].Addresses[0] != "192.0.2.10" {
		t.Errorf("the selectorless service's slices changed: %v %+v", err, list)
	}
	if _, err := c.CoreV1().Endpoints(ns).Get(ctx, "external", metav1.GetOptions{}); err == nil {
		t.Errorf("an Endpoints object was made for a selectorless service")
	}
}

// As kube's reconciler (k8s.io/endpointslice setEndpointSliceLabels): the slices of a
// headless Service carry service.kubernetes.io/headless, and the Service's own labels
// are copied except the reserved ones (service-name, managed-by, headless).
func TestEndpointSliceLabels(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	labelsOf := func(svc string) func() string {
		return func() string {
			list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
			if err != nil {
				return err.Error()
			}
			var out []string
			for _, s := range list.Items {
				out = append(out, fmt.Sprint(s.Labels))
			}
			return strings.Join(out, " ")
		}
	}
	headless := service("hl", false, corev1.ServicePort{Name: "http", Port: 80})
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if _, err := c.CoreV1().Services(ns).Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "labels of a headless Service's slice", labelsOf("hl"),
		"map[endpointslice.kubernetes.io/managed-by:endpointslice-controller.k8s.io kubernetes.io/service-name:hl service.kubernetes.io/headless: tier:front]")

	plain := service("plain", false, corev1.ServicePort{Name: "http", Port: 80})
	plain.Labels[corev1.IsHeadlessService] = "x"
	plain.Labels[discoveryv1.LabelManagedBy] = "me"
	if _, err := c.CoreV1().Services(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "labels of a Service with a cluster IP, reserved labels on the Service not copied", labelsOf("plain"),
		"map[endpointslice.kubernetes.io/managed-by:endpointslice-controller.k8s.io kubernetes.io/service-name:plain tier:front]")
}

// The endpoint controller's Endpoints are labelled as kube's (endpoints_controller.go):
// the Service's labels, endpoints.kubernetes.io/managed-by=endpoint-controller, and
// service.kubernetes.io/headless for a headless Service; no skip-mirror label (only the
// API server's own kubernetes Endpoints carry it).
func TestEndpointsLabels(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	headless := service("hl", false, corev1.ServicePort{Name: "http", Port: 80})
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	plain := service("plain", false, corev1.ServicePort{Name: "http", Port: 80})
	for _, svc := range []*corev1.Service{headless, plain} {
		if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labelsOf := func(name string) func() string {
		return func() string {
			ep, err := c.CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return fmt.Sprint(ep.Labels)
		}
	}
	eventually(t, "labels of a headless Service's Endpoints", labelsOf("hl"),
		"map[endpoints.kubernetes.io/managed-by:endpoint-controller service.kubernetes.io/headless: tier:front]")
	eventually(t, "labels of a Service's Endpoints", labelsOf("plain"),
		"map[endpoints.kubernetes.io/managed-by:endpoint-controller tier:front]")
}

// hintsState renders the hints of a service's slices: "ip:zones/nodes" for each endpoint.
func hintsState(t *testing.T, c kubernetes.Interface, ns, svc string) string {
	t.Helper()
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range list.Items {
		out = append(out, strings.Fields(endpointslice.HintsOf(&list.Items[i]))...)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// trafficDistribution puts hints on the slices (and takes them off), as kube's
// endpointslice controller; the topology-mode annotation Auto has it say in an Event
// whether it could.
func TestEndpointSliceHints(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns, c, ctx := cl.Namespace, cl.Client, context.Background()
	cl.CreateReadyNode(t, "hints-1", 10, map[string]string{corev1.LabelTopologyZone: "zone-a"})
	cl.CreateReadyNode(t, "hints-2", 10, map[string]string{corev1.LabelTopologyZone: "zone-b"})
	svc := service("close", false, corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)})
	svc.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
	if _, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod(t, c, ns, "close", podSpec{name: "a", ip: "10.244.7.1", node: "hints-1", ready: true, httpPort: 8080})
	runPod(t, c, ns, "close", podSpec{name: "b", ip: "10.244.7.2", node: "hints-2", ready: true, httpPort: 8080})
	runPod(t, c, ns, "close", podSpec{name: "c", ip: "10.244.7.3", node: "hints-2", ready: false, httpPort: 8080})
	hints := func() string { return hintsState(t, c, ns, "close") }
	eventually(t, "PreferClose: each ready endpoint hinted for its zone", hints, "10.244.7.1:zone-a/ 10.244.7.2:zone-b/ 10.244.7.3:")

	update := func(change func(*corev1.Service)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := c.CoreV1().Services(ns).Get(ctx, "close", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(cur)
			_, err = c.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	update(func(s *corev1.Service) {
		s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferSameNode)
	})
	eventually(t, "PreferSameNode: hinted for the node too", hints, "10.244.7.1:zone-a/hints-1 10.244.7.2:zone-b/hints-2 10.244.7.3:")
	update(func(s *corev1.Service) { s.Spec.TrafficDistribution = nil })
	eventually(t, "no trafficDistribution: no hints", hints, "10.244.7.1: 10.244.7.2: 10.244.7.3:")

	// Whether Auto can hint depends on every Node of the shared cluster: only that the
	// controller says so in an Event is checked here (hints_test.go has the cases).
	update(func(s *corev1.Service) { s.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"} })
	eventually(t, "an Event on the Service about Topology Aware Hints", func() string {
		list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=close"})
		if err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if strings.HasPrefix(e.Reason, "TopologyAwareHints") {
				return e.Source.Component
			}
		}
		return fmt.Sprint(len(list.Items), " events")
	}, "endpoint-slice-controller")
}

// A managed slice edited or deleted by someone else is put back; a Service whose target
// port changes keeps its slice (rewritten in place, as kube's reconciler recycles it).
func TestSlicesPutBackAndRecycled(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns, c, ctx := cl.Namespace, cl.Client, context.Background()
	cl.CreateReadyNode(t, "node-p", 10, nil)
	ports := []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}
	if _, err := c.CoreV1().Services(ns).Create(ctx, service("web", false, ports...), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runPod(t, c, ns, "web", podSpec{name: "a", ip: "10.244.3.1", node: "node-p", ready: true, httpPort: 8080})
	state := func() string { return strings.Join(slicesState(t, c, ns, "web"), "\n") }
	names := func() string {
		list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, s := range list.Items {
			out = append(out, s.Name)
		}
		return strings.Join(out, " ")
	}
	want := "http=8080|10.244.3.1:true/true/false@node-p/"
	eventually(t, "slices of web", state, want)
	name := names()

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := c.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Endpoints[0].Addresses = []string{"10.244.3.99"}
		_, err = c.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "a slice edited by someone else, put back", state, want)

	if err := c.DiscoveryV1().EndpointSlices(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a slice deleted by someone else, put back", func() string {
		if names() == name {
			return "the deleted slice still listed"
		}
		return state()
	}, want)

	name = names()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := c.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Spec.Ports[0].TargetPort = intstr.FromInt32(9090)
		_, err = c.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "slices after the target port changed", state, "http=9090|10.244.3.1:true/true/false@node-p/")
	if got := names(); got != name {
		t.Errorf("slice after the target port changed: %q, want the same slice %q rewritten", got, name)
	}
}
