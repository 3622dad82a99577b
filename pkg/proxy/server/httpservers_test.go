package server

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// occupied is an address another listener holds until the test ends or free is called.
func occupied(t *testing.T) (addr string, free func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String(), func() { _ = l.Close() }
}

var answer = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "miniproxy") })

// By default, as kube-proxy without --bind-address-hard-fail, a healthz or metrics address
// that is taken is logged and tried again: the server answers once the address is free, and
// nothing ends miniproxy.
func TestTakenServerAddressIsRetried(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	failed := make(chan serverFailure, 2)
	var addrs []string
	var frees []func()
	for _, server := range []func(string, http.Handler) httpServer{healthzServer, metricsServer} {
		addr, free := occupied(t)
		server(addr, answer).start(t.Context(), false, 20*time.Millisecond, failed, log)
		addrs, frees = append(addrs, addr), append(frees, free)
	}
	time.Sleep(100 * time.Millisecond) // a few tries
	for _, free := range frees {
		free()
	}
	for _, addr := range addrs {
		var body []byte
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get("http://" + addr + "/")
			if err == nil {
				body, _ = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				break
			}
		}
		if string(body) != "miniproxy" {
			t.Errorf("%s: answer %q once the address is free; want the server's", addr, body)
		}
	}
	select {
	case f := <-failed:
		t.Errorf("failure %+v sent without --bind-address-hard-fail", f)
	default:
	}
}

// With --bind-address-hard-fail a taken address is sent, once, with kube-proxy's Event
// reason and error wording: the healthz server's wrapped as kube-proxy's, the metrics
// server's the listener's own.
func TestTakenServerAddressHardFail(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		server     func(string, http.Handler) httpServer
		reason     string
		wantPrefix func(addr string) string
	}{
		{healthzServer, "FailedToStartProxierHealthcheck", func(addr string) string {
			return "healthz server failed: failed to start proxy healthz on " + addr + ": listen tcp " + addr + ": bind: address already in use"
		}},
		{metricsServer, "FailedToStartMetricServer", func(addr string) string {
			return "listen tcp " + addr + ": bind: address already in use"
		}},
	} {
		addr, _ := occupied(t)
		failed := make(chan serverFailure, 2)
		c.server(addr, answer).start(t.Context(), true, 10*time.Millisecond, failed, log)
		select {
		case f := <-failed:
			if f.reason != c.reason || f.err.Error() != c.wantPrefix(addr) {
				t.Errorf("failure %q %q; want %q %q", f.reason, f.err, c.reason, c.wantPrefix(addr))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no failure sent for a taken address", c.reason)
		}
		select {
		case f := <-failed:
			t.Errorf("%s: tried again after a hard failure: %+v", c.reason, f)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A hard failure is recorded as kube-proxy's Warning Event on the Node (action
// StartKubeProxy, the error as its note) and ends miniproxy with the error.
func TestServerFailureEvent(t *testing.T) {
	api := controlplanetest.Start(t, func(o *controlplane.Options) { o.Controllers = []string{"serviceaccount"} })
	client, err := apiclient.New(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	bindErr := errors.New("listen tcp 127.0.0.1:10249: bind: address already in use")
	err = recordServerFailure(t.Context(), client, "node-1", serverFailure{reason: "FailedToStartMetricServer", err: bindErr})
	if !errors.Is(err, bindErr) || err.Error() != bindErr.Error() {
		t.Errorf("error %v; want the server's, unchanged", err)
	}
	events, err := api.Client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(),
		metav1.ListOptions{FieldSelector: "involvedObject.kind=Node,involvedObject.name=node-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("events of node-1: %+v; want one", events.Items)
	}
	hostname, _ := os.Hostname()
	e := events.Items[0]
	if e.Type != corev1.EventTypeWarning || e.Reason != "FailedToStartMetricServer" || e.Action != "StartKubeProxy" ||
		e.Message != bindErr.Error() || e.ReportingController != "kube-proxy" || e.ReportingInstance != "kube-proxy-"+hostname {
		t.Errorf("event %+v; want kube-proxy's FailedToStartMetricServer", e)
	}
}
