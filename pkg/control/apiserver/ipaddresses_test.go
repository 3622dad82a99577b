package apiserver

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Service's cluster IP is held as an IPAddress named by the IP whose parent is the
// Service, as kube-apiserver's allocator keeps it: there from the Service's creation (the
// `kubernetes` Service's from the bootstrap), gone with its deletion.
func TestServiceClusterIPsAreIPAddresses(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, storetest.Bolt(t), "10.100.0.0/16", "10.200.0.2", 6443)
	if err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	ipGVR := networkingv1.SchemeGroupVersion.WithResource("ipaddresses")
	expect := func(name, svc string) {
		t.Helper()
		ip := read[*networkingv1.IPAddress](t, s, ipGVR, "", name)
		want := networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: svc}
		if ip.Spec.ParentRef == nil || *ip.Spec.ParentRef != want || ip.UID == "" || ip.CreationTimestamp.IsZero() ||
			ip.Labels["ipaddress.kubernetes.io/ip-family"] != "IPv4" || ip.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" {
			t.Errorf("IPAddress %s: %+v", name, ip)
		}
		// kube-apiserver's allocator writes it through a client as the manager kube-apiserver.
		const fields = `{"f:metadata":{"f:labels":{".":{},"f:ipaddress.kubernetes.io/ip-family":{},"f:ipaddress.kubernetes.io/managed-by":{}}},` +
			`"f:spec":{"f:parentRef":{".":{},"f:name":{},"f:namespace":{},"f:resource":{}}}}`
		if m := ip.ManagedFields; len(m) != 1 || m[0].Manager != "kube-apiserver" || m[0].Operation != metav1.ManagedFieldsOperationUpdate ||
			m[0].APIVersion != "networking.k8s.io/v1" || m[0].FieldsType != "FieldsV1" || m[0].Time == nil || m[0].FieldsV1 == nil || string(m[0].FieldsV1.Raw) != fields {
			t.Errorf("IPAddress %s's managedFields: %+v, want kube-apiserver's Update of %s", name, m, fields)
		}
	}
	expect("10.100.0.1", "kubernetes")

	svcs, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	obj, err := s.objects.Create(ctx, svcs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, generic.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := obj.(*corev1.Service).Spec.ClusterIP
	expect(clusterIP, "web")
	ips, _ := s.reg.Lookup(ipGVR)
	if _, _, err := s.objects.Delete(ctx, svcs, "default", "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.objects.Get(ctx, ips, "", clusterIP); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted Service's IPAddress %s: %v, want it gone", clusterIP, err)
	}

	// An IPAddress made through the API holds its IP: no Service is given it.
	taken := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.100.0.50"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "gateways", Name: "gw"}}}
	if _, err := s.objects.Create(ctx, ips, taken, generic.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.objects.Create(ctx, svcs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fixed", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.100.0.50", Ports: []corev1.ServicePort{{Port: 80}}}}, generic.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("a Service asking for an IP an IPAddress holds: %v, want refused", err)
	}
}
