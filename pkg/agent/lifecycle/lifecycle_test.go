package lifecycle

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var (
	testPod       = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
	testContainer = &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}
)

// httpHook is an httpGet handler against srv, and the host to send it to (the pod IP).
func httpHook(srv *httptest.Server, scheme corev1.URIScheme, path string, headers ...corev1.HTTPHeader) (*corev1.LifecycleHandler, string) {
	u, _ := url.Parse(srv.URL)
	return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.Parse(u.Port()), Scheme: scheme, HTTPHeaders: headers}}, u.Hostname()
}

// TestHTTPHookRequest: the hook's request is the kubelet's: its Host header as the host,
// the kubelet's User-Agent and Accept, a self-signed HTTPS server accepted (the kubelet's
// lifecycle client does not verify), a redirect to another host not followed.
func TestHTTPHookRequest(t *testing.T) {
	var host, agent, accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, agent, accept = r.Host, r.UserAgent(), r.Header.Get("Accept")
	}))
	defer srv.Close()
	h, ip := httpHook(srv, "", "/hook", corev1.HTTPHeader{Name: "Host", Value: "example.com"})
	if err := Run(context.Background(), nil, testPod, testContainer, ip, h, nil); err != nil {
		t.Fatal(err)
	}
	if host != "example.com" || agent != "kube-lifecycle/1.32" || accept != "*/*" {
		t.Errorf("request with Host %q, User-Agent %q, Accept %q; want example.com, kube-lifecycle/1.32, */*", host, agent, accept)
	}

	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	h, ip = httpHook(tlsSrv, corev1.URISchemeHTTPS, "/")
	if err := Run(context.Background(), nil, testPod, testContainer, ip, h, nil); err != nil {
		t.Errorf("HTTPS hook with a self-signed certificate: %v", err)
	}

	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere++ }))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+otherURL.Port()+"/", http.StatusFound)
	}))
	defer redirecting.Close()
	h, ip = httpHook(redirecting, "", "/")
	if err := Run(context.Background(), nil, testPod, testContainer, ip, h, nil); err != nil || elsewhere != 0 {
		t.Errorf("redirect to another host: err %v, followed %d times; want no error, not followed", err, elsewhere)
	}
}

// TestHTTPSHookFallsBackToHTTP: an HTTPS hook answered in plain HTTP is sent again over
// HTTP and succeeds, with the kubelet's LifecycleHTTPFallback warning.
func TestHTTPSHookFallsBackToHTTP(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	var events []string
	event := func(eventType, reason, format string, args ...any) {
		events = append(events, eventType+" "+reason+" "+fmt.Sprintf(format, args...))
	}
	h, ip := httpHook(srv, corev1.URISchemeHTTPS, "/", corev1.HTTPHeader{Name: "Authorization", Value: "Bearer secret"})
	if err := Run(context.Background(), nil, testPod, testContainer, ip, h, event); err != nil {
		t.Fatalf("HTTPS hook on an HTTP server: %v", err)
	}
	u, _ := url.Parse(srv.URL)
	want := "Warning LifecycleHTTPFallback request to HTTPS lifecycle hook " + u.Host + " got HTTP response, retry with HTTP succeeded"
	if len(events) != 1 || events[0] != want {
		t.Errorf("events %q, want [%q]", events, want)
	}
	if len(auth) != 1 || auth[0] != "" {
		t.Errorf("the retry over HTTP sent Authorization %q, want none", auth)
	}
}
