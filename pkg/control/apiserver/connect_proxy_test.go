package apiserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pods/proxy and services/proxy are authorized as kube-apiserver authorizes them: the
// HTTP method's verb on the proxy subresource of the name as written (NAME:PORT
// included), and the path after /proxy goes to the pod with its trailing slash.
func TestProxyAttributesAndSubpath(t *testing.T) {
	for _, tc := range []struct {
		method, path              string
		verb, resource, name, sub string
	}{
		{http.MethodGet, "/api/v1/namespaces/default/pods/web/proxy/", "get", "pods", "web", "/"},
		{http.MethodPost, "/api/v1/namespaces/default/services/echo:80/proxy/echo", "create", "services", "echo:80", "/echo"},
		{http.MethodPut, "/api/v1/namespaces/default/services/https:echo:web/proxy/a/b/", "update", "services", "https:echo:web", "/a/b/"},
		{http.MethodDelete, "/api/v1/namespaces/default/pods/web:8080/proxy", "delete", "pods", "web:8080", ""},
		{http.MethodPatch, "/api/v1/namespaces/default/pods/web/proxy/x", "patch", "pods", "web", "/x"},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		a, err := filters.Attributes(r, authn.User{Name: "vera"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Verb != tc.verb || a.Resource != tc.resource || a.Subresource != "proxy" || a.Name != tc.name || a.Namespace != "default" {
			t.Errorf("%s %s: attributes %+v", tc.method, tc.path, a)
		}
		ri, err := filters.RequestInfoOf(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := proxySubpath(ri); got != tc.sub {
			t.Errorf("%s: subpath %q, want %q", tc.path, got, tc.sub)
		}
	}
}

// What cannot be proxied says why: a pod without an IP, a bad ID, a service port that
// does not exist, a service without endpoints.
func TestProxyRefusals(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	runningPod(t, h, "web", true) // no IP in its status
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	// As kube-apiserver's ResourceLocation, which reads the Service's Endpoints: none (an
	// ExternalName Service, one without selector) is the Endpoints' NotFound; an Endpoints
	// without subsets names the service; one with addresses but none ready for the port
	// names the ID as written.
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.test"}}
	notReady := svc.DeepCopy()
	notReady.Name = "nr"
	for _, o := range []struct {
		path string
		obj  any
	}{
		{"services", svc}, {"services", ext}, {"services", notReady},
		{"endpoints", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "echo"}}},
		{"endpoints", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "nr"}, Subsets: []corev1.EndpointSubset{{
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.244.0.9"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}}}}},
	} {
		if w := do(t, h, "POST", "/api/v1/namespaces/default/"+o.path, o.obj); w.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", o.path, w.Code, w.Body)
		}
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"pods/web/proxy/", http.StatusBadRequest, "pod web has no IP address yet (phase Running)"},
		{"pods/web:http/proxy/", http.StatusBadRequest, `invalid pod request \"web:http\": the port of a pod is a number`},
		{"pods/ftp:web:80/proxy/", http.StatusBadRequest, `invalid pod request \"ftp:web:80\"`},
		{"services/echo:81/proxy/", http.StatusServiceUnavailable, `no service port 81 found for service \"echo\"`},
		{"services/echo:80/proxy/", http.StatusServiceUnavailable, `no endpoints available for service \"echo\"`},
		{"services/gone/proxy/", http.StatusNotFound, `services \"gone\" not found`},
		{"services/ext/proxy/", http.StatusNotFound, `endpoints \"ext\" not found`},
		{"services/nr:80/proxy/", http.StatusServiceUnavailable, `no endpoints available for service \"nr:80\"`},
		{"services/https:nr:http/proxy/", http.StatusServiceUnavailable, `no endpoints available for service \"https:nr:http\"`},
	} {
		w := do(t, h, "GET", "/api/v1/namespaces/default/"+tc.path, nil)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %s, want %d %s", tc.path, w.Code, w.Body, tc.code, tc.want)
		}
	}
}

// The upgrade-aware proxy's errors (pods/proxy, services/proxy, port-forward) are written
// as kube-apiserver's connect responder writes them: a Status as it is, any other error a
// 500 with its text and no reason ("error dialing backend: ...", not "Internal error
// occurred: ...").
func TestProxyErrorsAsKubeApiserver(t *testing.T) {
	for _, tc := range []struct {
		err     error
		code    int
		message string
	}{
		{errors.New("error dialing backend: dial tcp 10.244.1.9:80: connect: no route to host"), 500, "error dialing backend: dial tcp 10.244.1.9:80: connect: no route to host"},
		{apierrors.NewServiceUnavailable("error trying to reach service: x"), 503, "error trying to reach service: x"},
	} {
		w := httptest.NewRecorder()
		restResponder{}.Error(w, httptest.NewRequest("GET", "/", nil), tc.err)
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != tc.code || st.Message != tc.message || (tc.code == 500 && st.Reason != "") {
			t.Errorf("%v: %d %s, want %d %q", tc.err, w.Code, w.Body, tc.code, tc.message)
		}
	}
}
