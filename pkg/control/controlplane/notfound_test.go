package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// TestPathsNothingServes: what answers a path nothing serves, as kube-apiserver 1.36
// answered the same requests (recorded side by side): under a built-in group go-restful's
// Status, 404 or 405 for a collection's POST and DELETE on the other scope's path; under a
// group only CRDs serve, or none, the last handler's plain "404 page not found"
// (apiextensions-apiserver hands those on), and a custom resource's subresource it does
// not serve is its "NAME not found". Through client-go, the plain page becomes
// `the server could not find the requested resource (get RESOURCE.GROUP)`.
func TestPathsNothingServes(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
		schemalessCRD("paths.example.com", "gadgets", "Gadget", apiextensionsv1.NamespaceScoped),
		schemalessCRD("paths.example.com", "globals", "Global", apiextensionsv1.ClusterScoped),
	} {
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitEstablished(t, "crd/"+crd.Name)
	}
	const page = "404 page not found\n"
	generic := `{"code":404,"message":"the server could not find the requested resource","reason":"NotFound"}`
	notAllowed := `{"code":405,"message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed"}`
	named := `{"code":404,"message":"gadgets.paths.example.com \"x\" not found","reason":"NotFound"}`
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/apis/nowhere.example.com", page},
		{"GET", "/apis/nowhere.example.com/v1", page},
		{"GET", "/apis/nowhere.example.com/v1/things", page},
		{"GET", "/apis/paths.example.com/v2", page},
		{"GET", "/apis/paths.example.com/v1/nothings", page},
		{"GET", "/apis/paths.example.com/v1/gadgets/x", page},
		{"POST", "/apis/paths.example.com/v1/gadgets", page},
		{"DELETE", "/apis/paths.example.com/v1/gadgets", page},
		{"GET", "/apis/paths.example.com/v1/namespaces/default/globals", page},
		{"GET", "/apis/paths.example.com/v1/namespaces/default/gadgets/x/nope", named},
		{"PUT", "/apis/paths.example.com/v1/namespaces/default/gadgets/x/status", named},
		{"GET", "/apis/paths.example.com/v1/namespaces/default/gadgets/x/scale", named},
		{"GET", "/apis/apps/v9", generic},
		{"GET", "/apis/apps/v1/nothings", generic},
		{"GET", "/api/v1/pods/x", generic},
		{"PUT", "/apis/apps/v1/deployments/x", generic},
		{"GET", "/api/v1/namespaces/default/nodes/x", generic},
		{"POST", "/api/v1/pods", notAllowed},
		{"DELETE", "/api/v1/pods", notAllowed},
	} {
		code, body := c.raw(t, tc.method, tc.path, "{}")
		got := string(body)
		if tc.want != page {
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err == nil {
				out, _ := json.Marshal(map[string]any{"message": st.Message, "reason": st.Reason, "code": st.Code})
				got = string(out)
			}
		}
		if got != tc.want {
			t.Errorf("%s %s: %d %q, want %q", tc.method, tc.path, code, got, tc.want)
		}
	}
	// What a client makes of the page, as `kubectl get` of a kind whose CRD is gone shows it.
	cfg := rest.CopyConfig(admin)
	cfg.APIPath, cfg.GroupVersion, cfg.NegotiatedSerializer = "/apis", &schema.GroupVersion{Group: "paths.example.com", Version: "v1"}, scheme.Codecs.WithoutConversion()
	client, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = client.Get().Namespace("default").Resource("nothings").Do(ctx).Error()
	if want := "the server could not find the requested resource (get nothings.paths.example.com)"; !apierrors.IsNotFound(err) || err.Error() != want {
		t.Errorf("client-go's list of a resource not served: %v, want NotFound %q", err, want)
	}
}
