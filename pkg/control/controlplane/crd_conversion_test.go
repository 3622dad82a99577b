package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// conversionServer is a real HTTPS conversion webhook on loopback with a self-signed CA:
// v1's `hostPort` ("host:port") is v2's `host` and `port`; each converted object is
// labelled converted=yes (a change the API server keeps). Mode "rename" renames what it
// converts, which the API server must refuse.
type conversionServer struct {
	url      string
	caBundle []byte
	mode     atomic.Value // "", "rename"
	calls    atomic.Int32
	srv      *http.Server
}

func startConversionServer(t *testing.T) *conversionServer {
	t.Helper()
	l, certPEM := loopbackTLSListener(t)
	s := &conversionServer{url: "https://" + l.Addr().String() + "/convert", caBundle: certPEM}
	s.mode.Store("")
	s.srv = &http.Server{Handler: http.HandlerFunc(s.convert)}
	go func() { _ = s.srv.Serve(l) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *conversionServer) convert(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	to := review.Request.DesiredAPIVersion
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch to {
		case "conversion.example.com/v2":
			if hp, ok := u.Object["hostPort"].(string); ok {
				host, port, _ := strings.Cut(hp, ":")
				u.Object["host"], u.Object["port"] = host, port
				delete(u.Object, "hostPort")
			}
		case "conversion.example.com/v1":
			if host, ok := u.Object["host"].(string); ok {
				port, _ := u.Object["port"].(string)
				u.Object["hostPort"] = host + ":" + port
				delete(u.Object, "host")
				delete(u.Object, "port")
			}
		}
		u.SetAPIVersion(to)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["converted"] = "yes"
		u.SetLabels(labels)
		if s.mode.Load() == "rename" {
			u.SetName(u.GetName() + "-renamed")
		}
		data, err := u.MarshalJSON()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}

// hostPortsCRD has v1 (`hostPort`, the storage version) and v2 (`host`, `port`),
// converted by the webhook at url.
func hostPortsCRD(url string, caBundle []byte) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	version := func(name string, storage bool, fields ...string) apiextensionsv1.CustomResourceDefinitionVersion {
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, f := range fields {
			props[f] = str
		}
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "hostports.conversion.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "conversion.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "hostports", Singular: "hostport", Kind: "HostPort", ListKind: "HostPortList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true, "hostPort"), version("v2", false, "host", "port")},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caBundle},
					ConversionReviewVersions: []string{"v1", "v1beta1"},
				}},
		},
	}
}

// TestCustomResourceConversionWebhook: custom resources of a CustomResourceDefinition with
// the Webhook conversion strategy are converted by its HTTPS webhook (url, caBundle)
// whenever they are written or read at a version other than the one they are stored at:
// GET, LIST, WATCH, the answers to writes, objects stored at the old storage version after
// it changes; the webhook's labels are kept, a changed name is refused, a webhook that is
// down fails the requests that need it with kube's error and not the others; the CRD's
// conversion settings are checked as kube checks them; the conversion metrics count it all.
func TestCustomResourceConversionWebhook(t *testing.T) {
	c := startCluster(t)
	hook := startConversionServer(t)
	ctx := context.Background()
	admin, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	metricsBefore := c.metrics(t)

	bad := hostPortsCRD(hook.url, hook.caBundle)
	bad.Spec.Conversion.Webhook = nil
	if _, err := crds.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook") {
		t.Errorf("a Webhook strategy without a webhook: %v", err)
	}
	bad = hostPortsCRD(hook.url, hook.caBundle)
	bad.Spec.Conversion.Webhook.ConversionReviewVersions = []string{"v3"}
	if _, err := crds.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.conversion.conversionReviewVersions: Invalid value: ["v3"]: must include at least one of v1, v1beta1`) {
		t.Errorf("conversionReviewVersions without v1 or v1beta1: %v", err)
	}

	if _, err := crds.Create(ctx, hostPortsCRD(hook.url, hook.caBundle), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitEstablished(t, "crd/hostports.conversion.example.com")
	at := func(version string) dynamic.ResourceInterface {
		return customResources(admin, "conversion.example.com", version, "hostports")
	}
	object := func(version, name string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conversion.example.com/" + version, "kind": "HostPort",
			"metadata": map[string]any{"name": name}}}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	// isV1 and isV2 check an object's version and fields.
	isV1 := func(u *unstructured.Unstructured, hostPort string) error {
		if u.GetAPIVersion() != "conversion.example.com/v1" || u.Object["hostPort"] != hostPort || u.Object["host"] != nil {
			return fmt.Errorf("%s is not v1 with hostPort %s: %v", u.GetName(), hostPort, u.Object)
		}
		return nil
	}
	isV2 := func(u *unstructured.Unstructured, host, port string) error {
		if u.GetAPIVersion() != "conversion.example.com/v2" || u.Object["host"] != host || u.Object["port"] != port || u.Object["hostPort"] != nil {
			return fmt.Errorf("%s is not v2 with host %s, port %s: %v", u.GetName(), host, port, u.Object)
		}
		return nil
	}

	// Stored at v1, read at v2.
	created, err := at("v1").Create(ctx, object("v1", "one", map[string]any{"hostPort": "localhost:8080"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := isV1(created, "localhost:8080"); err != nil || created.GetLabels()["converted"] != "" {
		t.Errorf("created at the storage version: %v (labels %v)", err, created.GetLabels())
	}
	got, err := at("v2").Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("GET at v2: %v", err)
	}
	if err := isV2(got, "localhost", "8080"); err != nil || got.GetLabels()["converted"] != "yes" {
		t.Errorf("GET at v2: %v (labels %v, want the webhook's converted=yes)", err, got.GetLabels())
	}
	if got.GetUID() != created.GetUID() || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("GET at v2 changed the metadata: uid %s rv %s, created %s %s", got.GetUID(), got.GetResourceVersion(), created.GetUID(), created.GetResourceVersion())
	}

	// Written at v2: stored at v1, answered at v2.
	two, err := at("v2").Create(ctx, object("v2", "two", map[string]any{"host": "example.com", "port": "443"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create at v2: %v", err)
	}
	if err := isV2(two, "example.com", "443"); err != nil {
		t.Errorf("the answer to a create at v2: %v", err)
	}
	if got, err := at("v1").Get(ctx, "two", metav1.GetOptions{}); err != nil || isV1(got, "example.com:443") != nil {
		t.Errorf("created at v2, read at v1: %v %v", err, got)
	}
	two.Object["port"] = "8443"
	if updated, err := at("v2").Update(ctx, two, metav1.UpdateOptions{}); err != nil || isV2(updated, "example.com", "8443") != nil {
		t.Errorf("update at v2: %v %v", err, updated)
	}
	if got, err := at("v1").Get(ctx, "two", metav1.GetOptions{}); err != nil || isV1(got, "example.com:8443") != nil {
		t.Errorf("updated at v2, read at v1: %v %v", err, got)
	}

	list, err := at("v2").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("LIST at v2: %v %v", err, list)
	}
	for i, want := range [][2]string{{"localhost", "8080"}, {"example.com", "8443"}} {
		if err := isV2(&list.Items[i], want[0], want[1]); err != nil {
			t.Errorf("LIST at v2: %v", err)
		}
	}
	w, err := at("v2").Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]string{{"localhost", "8080"}, {"example.com", "8443"}} {
		select {
		case ev := <-w.ResultChan():
			u, ok := ev.Object.(*unstructured.Unstructured)
			if ev.Type != watch.Added || !ok {
				t.Fatalf("WATCH at v2: %v %v", ev.Type, ev.Object)
			}
			if err := isV2(u, want[0], want[1]); err != nil {
				t.Errorf("WATCH at v2: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("WATCH at v2: no event")
		}
	}
	w.Stop()

	// The storage version changes to v2: objects stored at v1 are converted for v2 too,
	// those written from now on are stored at v2.
	crd, err := crds.Get(ctx, "hostports.conversion.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v2 to be the storage version (a v1 object read at v2 without the webhook)", func() bool {
		calls := hook.calls.Load()
		u, err := at("v2").Create(ctx, object("v2", fmt.Sprintf("probe-%d", calls), map[string]any{"host": "p"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = at("v2").Delete(ctx, u.GetName(), metav1.DeleteOptions{})
		return hook.calls.Load() == calls
	})
	if _, err := at("v1").Create(ctx, object("v1", "three", map[string]any{"hostPort": "h3:3"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"v1", "v2"} {
		list, err := at(version).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 3 {
			t.Fatalf("LIST at %s of objects stored at v1 and v2: %v %v", version, err, list)
		}
		for i, want := range [][2]string{{"localhost", "8080"}, {"h3", "3"}, {"example.com", "8443"}} { // by name
			check := isV2(&list.Items[i], want[0], want[1])
			if version == "v1" {
				check = isV1(&list.Items[i], want[0]+":"+want[1])
			}
			if check != nil {
				t.Errorf("LIST at %s of objects stored at v1 and v2: %v", version, check)
			}
		}
	}

	// A webhook that changes what it must not: kube's error. (Objects not read at v1
	// before: what was read is shared through the watch cache, converted.)
	if _, err := at("v2").Create(ctx, object("v2", "four", map[string]any{"host": "h4", "port": "4"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hook.mode.Store("rename")
	want := "conversion webhook for conversion.example.com/v2, Kind=HostPort returned invalid object: must have the same name: four != four-renamed"
	if _, err := at("v1").Get(ctx, "four", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("GET through a webhook that renames: %v, want %q", err, want)
	}
	hook.mode.Store("")

	// A webhook that is down fails what needs it, and nothing else.
	if _, err := at("v2").Create(ctx, object("v2", "five", map[string]any{"host": "h5", "port": "5"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = hook.srv.Close()
	_, err = at("v1").Get(ctx, "five", metav1.GetOptions{})
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || status.Status().Code != http.StatusInternalServerError ||
		!strings.Contains(err.Error(), "conversion webhook for conversion.example.com/v2, Kind=HostPort failed: Post \""+hook.url) {
		t.Errorf("GET at v1 with the webhook down: %v", err)
	}
	if _, err := at("v1").Create(ctx, object("v1", "four", map[string]any{"hostPort": "h:4"}), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "conversion webhook for conversion.example.com/v1, Kind=HostPort failed") {
		t.Errorf("create at v1 with the webhook down: %v", err)
	}
	if _, err := at("v1").List(ctx, metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "conversion webhook for") {
		t.Errorf("LIST at v1 with the webhook down: %v", err)
	}
	if got, err := at("v2").Get(ctx, "five", metav1.GetOptions{}); err != nil || got.Object["host"] != "h5" {
		t.Errorf("GET at the storage version of an object stored at it needs no webhook: %v", err)
	}

	// apiextensions-apiserver's conversion metrics, on miniapi's /metrics as on
	// kube-apiserver's: what this test added to them (the counters are the process's).
	metricsAfter := c.metrics(t)
	for _, series := range []string{
		`apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="hostports.conversion.example.com",from_version="v1",succeeded="true",to_version="v2"}`,
		`apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="hostports.conversion.example.com",from_version="v2",succeeded="false",to_version="v1"}`,
		`apiserver_conversion_webhook_request_total{failure_type="",result="success"}`,
		`apiserver_conversion_webhook_request_total{failure_type="conversion_webhook_call_failure",result="failure"}`,
		`apiserver_conversion_webhook_request_total{failure_type="conversion_webhook_invalid_converted_object_failure",result="failure"}`,
		`apiserver_conversion_webhook_duration_seconds_count{failure_type="",result="success"}`,
	} {
		if added := metricValue(t, metricsAfter, series) - metricValue(t, metricsBefore, series); added < 1 {
			t.Errorf("/metrics: %s rose by %v, want at least 1", series, added)
		}
	}
}

// TestAdmissionWebhookEquivalentConvertsCustomResource: with matchPolicy Equivalent, a
// mutating webhook registered for v2 of a CRD whose conversion is a webhook is sent a custom
// resource created at v1 converted to v2 by the conversion webhook (v2's host and port, not
// v1's hostPort), and its patch at v2 is converted back to v1, as kube-apiserver does.
// Before, the webhook was not called (the CRD's versions were not known equivalent), and
// the conversion for it only changed apiVersion.
func TestAdmissionWebhookEquivalentConvertsCustomResource(t *testing.T) {
	c := startCluster(t)
	conv := startConversionServer(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	crds := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, hostPortsCRD(conv.url, conv.caBundle), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitEstablished(t, "crd/hostports.conversion.example.com")
	mux := http.NewServeMux()
	mux.Handle("/port", jsonPatchReview(func(obj *unstructured.Unstructured) string {
		seen := fmt.Sprintf("%s host=%v port=%v hostPort=%v", obj.GetAPIVersion(), obj.Object["host"], obj.Object["port"], obj.Object["hostPort"])
		return "[" + annotateSeen(obj, seen) + `,{"op":"add","path":"/port","value":"2"}]`
	}))
	hook := serveWebhooks(t, mux)
	c.mustKubectl(t, webhookConfiguration("MutatingWebhookConfiguration", "hostports-v2",
		hook.webhook("port.hostports.example.com", "/port", `{operations: [CREATE], apiGroups: [conversion.example.com], apiVersions: [v2], resources: [hostports]}`,
			"matchPolicy: Equivalent")), "apply", "-f", "-")

	v1 := customResources(admin, "conversion.example.com", "v1", "hostports")
	i := 0
	var got *unstructured.Unstructured
	waitFor(t, "the v2 webhook to see a hostport created at v1", func() bool {
		i++
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conversion.example.com/v1", "kind": "HostPort",
			"metadata": map[string]any{"name": fmt.Sprintf("hp%d", i)}, "hostPort": "h:1"}}
		var err error
		if got, err = v1.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Logf("create at v1: %v", err)
			return false
		}
		_, seen := got.GetAnnotations()["seen"]
		return seen
	})
	if seen, want := got.GetAnnotations()["seen"], "conversion.example.com/v2 host=h port=1 hostPort=<nil>"; seen != want {
		t.Errorf("the webhook of v2 was sent %q, want the object converted by the conversion webhook: %q", seen, want)
	}
	if got.GetAPIVersion() != "conversion.example.com/v1" || got.Object["hostPort"] != "h:2" || got.Object["port"] != nil {
		t.Errorf("the webhook's patch at v2 (port 2), converted back to v1: %v, want hostPort h:2", got.Object)
	}
}
