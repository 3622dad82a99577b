package endpointslicemirroring_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The tests share the package's miniapi, each in a namespace of its own (ns), and run in
// parallel: most of their time is waiting for the controller.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

// slicesState renders every slice of a service of ns: "name=port,...|ip:ready@node ..."
// sorted, and checks the labels, annotations and owner of the mirrored ones.
func slicesState(t *testing.T, c kubernetes.Interface, ns, svc string, owner types.UID) string {
	t.Helper()
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		ref := metav1.GetControllerOf(&s)
		if s.Labels[discoveryv1.LabelManagedBy] != "endpointslicemirroring-controller.k8s.io" || s.Labels["team"] != "blue" ||
			s.Annotations["note"] != "kept" || s.Annotations[corev1.LastAppliedConfigAnnotation] != "" ||
			ref == nil || ref.Kind != "Endpoints" || ref.Name != svc || ref.UID != owner {
			t.Errorf("slice %s: labels %v annotations %v owners %v", s.Name, s.Labels, s.Annotations, s.OwnerReferences)
		}
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s=%d/%s", *p.Name, *p.Port, *p.Protocol))
		}
		sort.Strings(ports)
		var eps []string
		for _, e := range s.Endpoints {
			eps = append(eps, fmt.Sprintf("%s:%v@%s", e.Addresses[0], *e.Conditions.Ready, ptr.Deref(e.NodeName, "")))
		}
		out = append(out, string(s.AddressType)+" "+strings.Join(ports, ",")+"|"+strings.Join(eps, " "))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// eventually waits for got to read want, as long as the controllers take on a loaded machine.
func eventually(t *testing.T, what string, got func() string, want string) {
	t.Helper()
	controllertest.Eventually(t, what, 20*time.Second, got, want)
}

// createSelectorless creates a Service without a selector: its Endpoints are the user's.
func createSelectorless(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	if _, err := c.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func customEndpoints(name string, subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "blue"},
			Annotations: map[string]string{"note": "kept", corev1.LastAppliedConfigAnnotation: "{}"}},
		Subsets: subsets,
	}
}

func addresses(ips ...string) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, len(ips))
	for i, ip := range ips {
		out[i] = corev1.EndpointAddress{IP: ip}
	}
	return out
}

func TestMirrorsCustomEndpointsThroughCreateUpdateAndDelete(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	createSelectorless(t, c, ns, "custom")
	node := "node-a"
	http := corev1.EndpointSubset{
		Addresses:         []corev1.EndpointAddress{{IP: "10.1.2.3", NodeName: &node}},
		NotReadyAddresses: addresses("10.1.2.4", "fd00::1"),
		Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080}},
	}
	dns := corev1.EndpointSubset{Addresses: addresses("10.1.2.5"), Ports: []corev1.EndpointPort{{Name: "dns", Port: 5353, Protocol: corev1.ProtocolUDP}}}
	ep, err := c.CoreV1().Endpoints(ns).Create(ctx, customEndpoints("custom", http, dns), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices := func() string { return slicesState(t, c, ns, "custom", ep.UID) }
	eventually(t, "slices by ports and address type", slices, strings.Join([]string{
		"IPv4 dns=5353/UDP|10.1.2.5:true@",
		"IPv4 http=8080/TCP|10.1.2.3:true@node-a 10.1.2.4:false@",
		"IPv6 http=8080/TCP|fd00::1:false@",
	}, "\n"))

	// Update: an address changes, the IPv6 one and the dns subset go.
	ep.Subsets = []corev1.EndpointSubset{{Addresses: addresses("10.2.3.4"), Ports: http.Ports}}
	if ep, err = c.CoreV1().Endpoints(ns).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "slices after the update", slices, "IPv4 http=8080/TCP|10.2.3.4:true@")

	// A mirrored slice deleted by someone else comes back.
	list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=custom"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("slices of custom: %v %d", err, len(list.Items))
	}
	if err := c.DiscoveryV1().EndpointSlices(ns).Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "a new slice in place of the deleted one", 20*time.Second, func() (bool, string) {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=custom"})
		return err == nil && len(l.Items) == 1 && l.Items[0].UID != list.Items[0].UID, fmt.Sprint(err, l)
	})
	eventually(t, "slices after the deletion by someone else", slices, "IPv4 http=8080/TCP|10.2.3.4:true@")

	if err := c.CoreV1().Endpoints(ns).Delete(ctx, "custom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "slices after the Endpoints went", slices, "")
}

func TestMirrorsOnlySelectorlessServicesEndpoints(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	subset := corev1.EndpointSubset{Addresses: addresses("10.1.0.1"), Ports: []corev1.EndpointPort{{Name: "http", Port: 80}}}

	// Endpoints before their Service: mirrored once the Service comes.
	ep, err := c.CoreV1().Endpoints(ns).Create(ctx, customEndpoints("late", subset), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Marked skip-mirror: never mirrored.
	skipped := customEndpoints("skipped", subset)
	skipped.Labels[discoveryv1.LabelSkipMirror] = "true"
	if _, err := c.CoreV1().Endpoints(ns).Create(ctx, skipped, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createSelectorless(t, c, ns, "skipped")
	if got := slicesState(t, c, ns, "late", ep.UID); got != "" {
		t.Fatalf("slices without a Service: %q", got)
	}
	createSelectorless(t, c, ns, "late")
	slices := func() string { return slicesState(t, c, ns, "late", ep.UID) }
	eventually(t, "slices once the Service exists", slices, "IPv4 http=80/TCP|10.1.0.1:true@")

	// The Service gets a selector: its slices are the endpointslice controller's now.
	svc, err := c.CoreV1().Services(ns).Get(ctx, "late", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = map[string]string{"app": "late"}
	if _, err := c.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "mirrored slices after a selector was set", func() string {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelManagedBy + "=endpointslicemirroring-controller.k8s.io"})
		if err != nil {
			return err.Error()
		}
		return fmt.Sprint(len(l.Items))
	}, "0")

	// Checked last, after the controller had time to act on it.
	l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=skipped"})
	if err != nil || len(l.Items) != 0 {
		t.Errorf("skip-mirror Endpoints were mirrored: %v %v", err, l.Items)
	}
}

func TestMirrorsAtMostMaxEndpointsPerSubset(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	ns := cl.Namespace
	c := cl.Client
	ctx := context.Background()
	createSelectorless(t, c, ns, "big")
	var ips []string
	for i := range 1005 {
		ips = append(ips, fmt.Sprintf("10.3.%d.%d", i/250, 1+i%250))
	}
	subset := corev1.EndpointSubset{Addresses: addresses(ips...), Ports: []corev1.EndpointPort{{Name: "http", Port: 80}}}
	if _, err := c.CoreV1().Endpoints(ns).Create(ctx, customEndpoints("big", subset), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one slice of 1000 endpoints", func() string {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=big"})
		if err != nil {
			return err.Error()
		}
		var sizes []int
		for _, s := range l.Items {
			sizes = append(sizes, len(s.Endpoints))
		}
		return fmt.Sprint(sizes)
	}, "[1000]")
	controllertest.WaitFor(t, "a TooManyAddressesToMirror event", 20*time.Second, func() (bool, string) {
		list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=big,reason=TooManyAddressesToMirror"})
		return err == nil && len(list.Items) > 0 && strings.Contains(list.Items[0].Message, "5 addresses were skipped"), fmt.Sprint(err, list)
	})
}
