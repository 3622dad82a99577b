package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"
)

func conversionReview(t *testing.T, apiVersion, desired string, objects ...string) []byte {
	t.Helper()
	raws := make([]string, len(objects))
	for i, o := range objects {
		raws[i] = fmt.Sprintf(`{"apiVersion":%q,"kind":"E2e-test-crd-webhook-1234-crd","metadata":{"name":"cr-%d","namespace":"ns","uid":"u%d"},%s}`,
			"stable.example.com/"+strings.Split(o, "|")[0], i, i, strings.Split(o, "|")[1])
	}
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":"ConversionReview","request":{"uid":"req-1","desiredAPIVersion":%q,"objects":[%s]}}`,
		apiVersion, desired, strings.Join(raws, ",")))
}

func post(t *testing.T, body []byte) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	conversionHandler{}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/crdconvert", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

func objectsOf(t *testing.T, raws []runtime.RawExtension) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range raws {
		var m map[string]any
		if err := json.Unmarshal(r.Raw, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestCRDConversionWebhook: /crdconvert converts the suite's custom resource between v1
// (`hostPort`) and v2 (`host`, `port`) in ConversionReviews v1 and v1beta1, answering in
// the request's version with its uid, fails a review with upstream's messages, and
// refuses a body that is not a ConversionReview or has no request.
func TestCRDConversionWebhook(t *testing.T) {
	var v1 apiextensionsv1.ConversionReview
	if err := json.Unmarshal(post(t, conversionReview(t, "apiextensions.k8s.io/v1", "stable.example.com/v2",
		`v1|"hostPort":"localhost:8080"`, `v1|"other":1`)), &v1); err != nil {
		t.Fatal(err)
	}
	if v1.APIVersion != "apiextensions.k8s.io/v1" || v1.Response == nil || v1.Response.UID != "req-1" || v1.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("v1 review answered %+v", v1)
	}
	got := objectsOf(t, v1.Response.ConvertedObjects)
	if len(got) != 2 || got[0]["apiVersion"] != "stable.example.com/v2" || got[0]["host"] != "localhost" || got[0]["port"] != "8080" || got[0]["hostPort"] != nil {
		t.Errorf("v1 to v2: %v", got)
	}
	if md := got[1]["metadata"].(map[string]any); got[1]["apiVersion"] != "stable.example.com/v2" || got[1]["other"] != float64(1) || md["uid"] != "u1" {
		t.Errorf("an object without hostPort keeps its fields and metadata: %v", got[1])
	}

	var v1beta1 apiextensionsv1beta1.ConversionReview
	if err := json.Unmarshal(post(t, conversionReview(t, "apiextensions.k8s.io/v1beta1", "stable.example.com/v1",
		`v2|"host":"example.com","port":"80"`, `v2|"port":"81"`)), &v1beta1); err != nil {
		t.Fatal(err)
	}
	if v1beta1.APIVersion != "apiextensions.k8s.io/v1beta1" || v1beta1.Response == nil || v1beta1.Response.UID != "req-1" {
		t.Fatalf("v1beta1 review answered %+v", v1beta1)
	}
	got = objectsOf(t, v1beta1.Response.ConvertedObjects)
	if len(got) != 2 || got[0]["hostPort"] != "example.com:80" || got[0]["host"] != nil || got[1]["hostPort"] != ":81" || got[1]["apiVersion"] != "stable.example.com/v1" {
		t.Errorf("v2 to v1: %v", got)
	}

	for _, c := range []struct {
		body []byte
		want string
	}{
		{conversionReview(t, "apiextensions.k8s.io/v1", "stable.example.com/v2", `v1|"hostPort":"a:b:c"`), "invalid hostPort value `a:b:c`"},
		{conversionReview(t, "apiextensions.k8s.io/v1", "stable.example.com/v1", `v1|"hostPort":"a:1"`), "conversion from a version to itself should not call the webhook: stable.example.com/v1"},
		{conversionReview(t, "apiextensions.k8s.io/v1", "stable.example.com/v3", `v1|"hostPort":"a:1"`), `unexpected conversion version "stable.example.com/v3"`},
	} {
		var r apiextensionsv1.ConversionReview
		if err := json.Unmarshal(post(t, c.body), &r); err != nil {
			t.Fatal(err)
		}
		if r.Response == nil || r.Response.Result.Status != metav1.StatusFailure || r.Response.Result.Message != c.want || len(r.Response.ConvertedObjects) != 0 {
			t.Errorf("want failure %q, got %+v", c.want, r.Response)
		}
	}
	for _, body := range []string{
		`{"kind":"Pod","apiVersion":"v1"}`,
		`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}`,
		`{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1beta1"}`,
	} {
		rec := httptest.NewRecorder()
		conversionHandler{}.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/crdconvert", strings.NewReader(body)))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (not a ConversionReview, or one without a request)", body, rec.Code)
		}
	}
}

// TestCRDConversionWebhookCommand: the subcommand serves /readyz and /crdconvert over HTTPS
// with the key pair and port of its flags, and stops with its context.
func TestCRDConversionWebhookCommand(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	cmd := crdConversionWebhookCommand()
	cmd.SetArgs([]string{"--tls-cert-file=" + cert, "--tls-private-key-file=" + key, fmt.Sprintf("--port=%d", port), "-v=4"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := client.Post(base+"/crdconvert", "application/json", bytes.NewReader(conversionReview(t, "apiextensions.k8s.io/v1", "stable.example.com/v2", `v1|"hostPort":"h:1"`)))
	if err != nil {
		t.Fatal(err)
	}
	var r apiextensionsv1.ConversionReview
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Response == nil || r.Response.Result.Status != metav1.StatusSuccess {
		t.Errorf("/crdconvert over HTTPS: %v %+v", err, r.Response)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the command ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the command did not stop with its context")
	}
}
