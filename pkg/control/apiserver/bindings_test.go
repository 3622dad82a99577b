package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestLegacyBindings: POST of a Binding to core v1's bindings assigns the pod it names, as
// kube-apiserver's LegacyBindingREST does, and discovery lists bindings first in /api/v1
// with the one verb create, in the legacy and the aggregated form.
func TestLegacyBindings(t *testing.T) {
	client, ctx := bindingsClient(t)
	if _, err := client.CoreV1().Pods("default").Create(ctx, podNamed("web", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	if err := client.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").Body(b).Do(ctx).Error(); err != nil {
		t.Fatalf("POST bindings: %v", err)
	}
	pod, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || pod.Spec.NodeName != "node-1" {
		t.Fatalf("pod after the binding: node %q, %v", pod.Spec.NodeName, err)
	}
	if err := client.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").Body(b).Do(ctx).Error(); err == nil {
		t.Error("a second binding of the pod was accepted")
	}
	var code int
	client.CoreV1().RESTClient().Get().Namespace("default").Resource("bindings").Do(ctx).StatusCode(&code)
	if code != http.StatusMethodNotAllowed {
		t.Errorf("GET bindings: %d, want 405", code)
	}

	legacy, err := client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.APIResource{Name: "bindings", SingularName: "binding", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}}
	if got := legacy.APIResources[0]; got.Name != want.Name || got.SingularName != want.SingularName || !got.Namespaced || got.Kind != want.Kind || !slices.Equal(got.Verbs, want.Verbs) {
		t.Errorf("first /api/v1 resource %+v, want %+v", got, want)
	}
	// client-go reads aggregated discovery when the server offers it, as kubectl api-resources does.
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lists {
		for _, r := range l.APIResources {
			if l.GroupVersion == "v1" && r.Name == "bindings" {
				found = slices.Equal(r.Verbs, want.Verbs) && r.Namespaced && r.Kind == "Binding"
			}
		}
	}
	if !found {
		t.Error("aggregated discovery does not list v1 bindings with verb create")
	}
}

// TestBindingRefusals: a binding that does not name its pod, or names no node, is refused
// as kube-apiserver v1.36.3 refuses it (its answers to the same POSTs): 400 for a name or
// namespace other than the URL's, and kube's 500 carrying ValidatePodBinding's errors for
// the target.
func TestBindingRefusals(t *testing.T) {
	client, ctx := bindingsClient(t)
	if _, err := client.CoreV1().Pods("default").Create(ctx, podNamed("web", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int
	client.CoreV1().RESTClient().Post().Namespace("default").Resource("bindings").Body(&corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}).Do(ctx).StatusCode(&code)
	if code != http.StatusBadRequest {
		t.Errorf("a legacy binding without a name: %d, want 400 (Name parameter required.)", code)
	}
	for _, c := range []struct {
		what    string
		binding corev1.Binding
		code    int32
		message string
	}{
		{"no name", corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}, http.StatusBadRequest, "name in URL does not match name in Binding object"},
		{"another name", corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Target: corev1.ObjectReference{Name: "node-1"}}, http.StatusBadRequest, "name in URL does not match name in Binding object"},
		{"another namespace", corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "other"}, Target: corev1.ObjectReference{Name: "node-1"}}, http.StatusBadRequest,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"a pod, no name", corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: corev1.ObjectReference{Kind: "Pod"}}, http.StatusInternalServerError,
			`[target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>", target.name: Required value]`},
	} {
		err := client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("web").SubResource("binding").Body(&c.binding).Do(ctx).Error()
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != c.code || status.Status().Message != c.message {
			t.Errorf("%s: %v, want %d %q", c.what, err, c.code, c.message)
		}
	}
}

// TestEvictionNameRefusals: an eviction naming another pod or namespace than its URL is a
// 400 in kube-apiserver v1.36.3's words, the namespace checked first.
func TestEvictionNameRefusals(t *testing.T) {
	client, ctx := bindingsClient(t)
	for _, c := range []struct {
		what string
		meta metav1.ObjectMeta
		want string
	}{
		{"another name", metav1.ObjectMeta{Name: "other"}, "name in URL does not match name in Eviction object"},
		{"another namespace", metav1.ObjectMeta{Name: "web", Namespace: "other"}, "the namespace of the provided object does not match the namespace sent on the request"},
	} {
		ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: c.meta}
		err := client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("web").SubResource("eviction").Body(ev).Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || err.Error() != c.want {
			t.Errorf("%s: %v, want 400 %q", c.what, err, c.want)
		}
	}
}

// bindingsClient is a client of a server of its own, over HTTP.
func bindingsClient(t *testing.T) (kubernetes.Interface, context.Context) {
	s, _ := newCachedServer(t)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}), context.Background()
}
