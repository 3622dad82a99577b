package apiserver

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The logs of a pod not yet scheduled are empty (kube-apiserver's LogLocation has no
// location for it, a null stream answered 204 No Content: kubectl logs prints nothing and
// succeeds), once its container is checked; exec and attach are refused.
func TestLogsOfAnUnscheduledPod(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("pending", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log", nil)
	if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Errorf("logs of an unscheduled pod: %d %q, want 204 and nothing", w.Code, w.Body)
	}
	w = do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?container=db", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "container db is not valid for pod pending") {
		t.Errorf("logs of a container the pod does not have: %d %s", w.Code, w.Body)
	}
	w = do(t, h, "POST", "/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=true", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "pod pending does not have a host assigned") {
		t.Errorf("exec in an unscheduled pod: %d %s", w.Code, w.Body)
	}
}

// pods/log options are validated as kube-apiserver's LogREST validates them, before the
// pod is read: `kubectl logs --since=400ms` (sent as sinceSeconds=0) is a 422 naming the
// field, not the node's own wording.
func TestLogOptionsValidated(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("pending", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct{ pod, query, want string }{
		{"pending", "sinceSeconds=0", `PodLogOptions "pending" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0`},
		{"pending", "tailLines=-2", `PodLogOptions "pending" is invalid: tailLines: Invalid value: -2: must be greater than or equal to 0`},
		{"pending", "limitBytes=0", `PodLogOptions "pending" is invalid: limitBytes: Invalid value: 0: must be greater than 0`},
		{"pending", "sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", "PodLogOptions \"pending\" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"},
		// The PodLogsQuerySplitStreams feature is alpha, off by default in v1.36.
		{"pending", "stream=Stdout", `PodLogOptions "pending" is invalid: stream: Forbidden: may not be specified`},
		// Before the pod is looked up.
		{"absent", "tailLines=-1&limitBytes=-1", `PodLogOptions "absent" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: -1: must be greater than 0]`},
	} {
		w := do(t, h, "GET", "/api/v1/namespaces/default/pods/"+tc.pod+"/log?"+tc.query, nil)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Message != tc.want {
			t.Errorf("GET log?%s: %d %s\nwant 422 %q", tc.query, w.Code, w.Body, tc.want)
		}
	}
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?tailLines=x", nil)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `parsing \"x\": invalid syntax`) {
		t.Errorf("GET log?tailLines=x: %d %s, want 400 naming the value", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default/pods/pending/log?tailLines=3&sinceSeconds=1&limitBytes=1", nil); w.Code != http.StatusNoContent {
		t.Errorf("GET log with valid options: %d %s, want 204 (pod not scheduled)", w.Code, w.Body)
	}
}

// pods/log is proxied to the pod's node: a node that does not exist is named in the error.
func TestConnectWithoutNodeEndpoint(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	runningPod(t, h, "a", true)
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/a/log", nil)
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `nodes \"node-1\" not found`) {
		t.Fatalf("GET pods/a/log on a missing node: %d %s", w.Code, w.Body)
	}
}

// sendForStatus sends method url with header to a running server and reads the answer:
// its code, its body and the Status in it.
func sendForStatus(t *testing.T, method, url string, header http.Header) (int, []byte, metav1.Status) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	maps.Copy(req.Header, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, apitest.ResponseStatus(t, data)
}

// TestNodesProxyRefusesNonGlobalAddress: nodes/proxy refuses a node whose address is not a
// global unicast one (loopback here) with kube's 400 "address not allowed", upgrades too,
// before dialing it (kube's node ResourceLocation, isProxyableHostname); a pod's log on the
// same node is still read, as kube checks nodes/proxy alone.
func TestNodesProxyRefusesNonGlobalAddress(t *testing.T) {
	var mu sync.Mutex
	var dialed []string
	srv := serverWithNode(t, fakeNodeRuntime{}, func(r *http.Request) { mu.Lock(); dialed = append(dialed, r.URL.Path); mu.Unlock() })
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}, "X-Stream-Protocol-Version": {"v4.channel.k8s.io"}}
	for _, header := range []http.Header{nil, spdy} {
		code, data, st := sendForStatus(t, http.MethodGet, srv.URL+"/api/v1/nodes/node-1/proxy/healthz", header)
		if code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != "address not allowed" {
			t.Errorf("nodes/proxy to a node on 127.0.0.1 (upgrade %q): %d %s; want 400 \"address not allowed\"", header.Get("Upgrade"), code, data)
		}
	}
	mu.Lock()
	if len(dialed) != 0 {
		t.Errorf("the node was dialed for %v", dialed)
	}
	mu.Unlock()
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/pods/a/log?previous=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(dialed, []string{"/containerLogs/default/a/c"}) {
		t.Errorf("log of a pod on a node at 127.0.0.1: the node was dialed for %v; want its log", dialed)
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
