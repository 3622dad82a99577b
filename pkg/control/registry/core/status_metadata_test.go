package core_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// TestStatusTakesMetadata: an update through the status subresource takes the body's
// metadata, as most of Kubernetes' status strategies do (they reset only the spec), except
// what a kind's strategy keeps: a Deployment's labels, a Pod's owners, all of an
// APIService's labels and annotations. The status-lifecycle conformance tests of Services,
// Ingresses and Namespaces patch an annotation and the status at once.
func TestStatusTakesMetadata(t *testing.T) {
	c := controlplanetest.Shared(t)
	// team is named after the test's namespace, so a second run (-count) makes a new one.
	ctx, ns, team := context.Background(), c.Namespace, c.Namespace+"-a"
	dyn := dynamic.NewForConfigOrDie(c.Config)
	create := func(obj any) {
		t.Helper()
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = c.Client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = c.Client.CoreV1().Services(ns).Create(ctx, o, metav1.CreateOptions{})
		case *networkingv1.Ingress:
			_, err = c.Client.NetworkingV1().Ingresses(ns).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			_, err = c.Client.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "web"}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}})
	create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: ptr.To("example.com/internal-vip"),
			Ports: []corev1.ServicePort{{Port: 80}}}})
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})

	for _, tc := range []struct {
		gvr        schema.GroupVersionResource
		namespace  string
		name       string
		patch      string
		annotation bool // the patched annotation is taken
		label      bool // the patched label is taken
	}{
		{gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), name: team,
			patch:      `{"spec":{"finalizers":[]},"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E"}]}}`,
			annotation: true, label: true},
		{gvr: corev1.SchemeGroupVersion.WithResource("services"), namespace: ns, name: "web",
			patch:      `{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.1"}]}}}`,
			annotation: true, label: true},
		{gvr: networkingv1.SchemeGroupVersion.WithResource("ingresses"), namespace: ns, name: "web",
			patch:      `{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.1"}]}}}`,
			annotation: true, label: true},
		{gvr: appsv1.SchemeGroupVersion.WithResource("deployments"), namespace: ns, name: "web",
			patch:      `{"status":{"observedGeneration":1}}`,
			annotation: true, label: false},
		{gvr: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}, name: "v1.apps",
			patch:      `{"status":{"conditions":[{"type":"Available","status":"True","reason":"Local"}]}}`,
			annotation: false, label: false},
	} {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			patch := `{"metadata":{"annotations":{"patched":"yes"},"labels":{"patched":"yes"}},` + tc.patch[1:]
			got, err := dyn.Resource(tc.gvr).Namespace(tc.namespace).Patch(ctx, tc.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatal(err)
			}
			if a := got.GetAnnotations()["patched"] == "yes"; a != tc.annotation {
				t.Errorf("annotation taken: %v, want %v (annotations %v)", a, tc.annotation, got.GetAnnotations())
			}
			if l := got.GetLabels()["patched"] == "yes"; l != tc.label {
				t.Errorf("label taken: %v, want %v (labels %v)", l, tc.label, got.GetLabels())
			}
			if _, ok := got.Object["status"]; !ok {
				t.Errorf("status not written: %v", got.Object)
			}
		})
	}
	// The spec stays through status: the namespace keeps its kubernetes finalizer.
	got, err := c.Client.CoreV1().Namespaces().Get(ctx, team, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Finalizers) != 1 || len(got.Status.Conditions) != 1 {
		t.Errorf("namespace after a status patch: finalizers %v, conditions %v (want the kubernetes finalizer kept and the condition)",
			got.Spec.Finalizers, got.Status.Conditions)
	}
}
