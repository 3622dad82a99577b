package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// The fuzz targets feed the request decoding paths arbitrary input: they must answer an API
// error (a Status for the client), never panic. `make fuzz` runs each for a bounded time;
// their seed corpora are under testdata/fuzz. Plain `go test` runs the seeds.

var fuzzPods = func() *registry.Resource {
	reg, err := builtin.Registry()
	if err != nil {
		panic(err)
	}
	res, _ := reg.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	return res
}()

var bodyTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}

func fuzzPodJSON() []byte {
	data, _ := json.Marshal(podNamed("web", "a"))
	return data
}

// checkAPIError fails on an error that would not become a meaningful Status.
func checkAPIError(t *testing.T, err error) {
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		t.Fatalf("error without a Status: %v", err)
	}
}

func FuzzDecodeBody(f *testing.F) {
	pod := fuzzPodJSON()
	pb, err := encodeProtobuf(podNamed("web", "a"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), pod)
	f.Add(uint8(1), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: [{name: c, image: busybox}]\n"))
	f.Add(uint8(2), pb)
	f.Add(uint8(0), []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","name":"b"},"spec":{"containers":[[[]]]}}`))
	f.Add(uint8(1), []byte("a: &a [*a, *a]\nb: *a\n"))
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		r := httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", bytes.NewReader(body))
		r.Header.Set("Content-Type", bodyTypes[int(kind)%len(bodyTypes)])
		obj, err := fuzzPods.New()
		if err != nil {
			t.Fatal(err)
		}
		for _, directive := range []fieldValidation{validationStrict, validationWarn} {
			r.Body = io.NopCloser(bytes.NewReader(body))
			_, err := decodeBody(r, obj, fuzzPods.GVK(), directive)
			checkAPIError(t, err)
		}
	})
}

var fuzzPatchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}

func FuzzPatch(f *testing.F) {
	f.Add(uint8(0), []byte(`[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"copy","from":"/spec","path":"/z"}]`))
	f.Add(uint8(0), []byte(`[{"op":"move","from":"/spec/containers/0","path":"/spec/containers/-"},{"op":"remove","path":"/status"}]`))
	f.Add(uint8(1), []byte(`{"metadata":{"labels":{"app":null}},"spec":{"containers":null}}`))
	f.Add(uint8(2), []byte(`{"spec":{"containers":[{"name":"c","$patch":"delete"}],"$setElementOrder/containers":[{"name":"c"}]}}`))
	f.Add(uint8(2), []byte(`{"metadata":{"$retainKeys":["labels"],"finalizers":{"$deleteFromPrimitiveList":["x"]}}}`))
	f.Fuzz(func(t *testing.T, kind uint8, patch []byte) {
		cur := podNamed("web", "a")
		cur.Finalizers = []string{"x"}
		_, _, err := applyPatch(fuzzPods, fuzzPatchTypes[int(kind)%len(fuzzPatchTypes)], cur, patch, validationStrict)
		checkAPIError(t, err)
	})
}

func FuzzSelectors(f *testing.F) {
	f.Add("app=web,tier!=db,env in (a,b),!gone,x", "metadata.name=a,spec.nodeName!=n,status.phase==Running")
	f.Add("a notin (,),b>1,c<2", `metadata.name=a\,b`)
	f.Add("", "spec.nodeName=")
	f.Fuzz(func(t *testing.T, labelSelector, fieldSelector string) {
		r := httptest.NewRequest("GET", "/api/v1/pods?"+url.Values{"labelSelector": {labelSelector}, "fieldSelector": {fieldSelector}}.Encode(), nil)
		sel, err := parseSelectors(r, fuzzPods)
		checkAPIError(t, err)
		if err == nil {
			pod := podNamed("web", "a")
			pod.Spec.NodeName = "n"
			sel.matches(fuzzPods, pod)
		}
	})
}

func FuzzRequestPath(f *testing.F) {
	for _, p := range []string{"/api/v1/namespaces/default/pods/web/status", "/apis/apps/v1/deployments", "/api/v1/namespaces/a/finalize",
		"/api/v1/nodes/n/proxy/x/y", "/apis//v1/", "/api/v1/namespaces/a/pods/b/exec"} {
		f.Add("GET", p, "watch=1")
	}
	f.Add("DELETE", "/api/v1/namespaces", "")
	f.Add("PATCH", "/apis/g/v/namespaces/n/r/x/scale", "timeout=1s")
	f.Fuzz(func(t *testing.T, method, path, query string) {
		u := &url.URL{Path: path, RawQuery: query}
		r, err := http.NewRequest(method, u.String(), nil)
		if err != nil {
			return // not a request a server could receive
		}
		ri, err := filters.RequestInfoOf(r)
		if err != nil {
			return // a 400 (/api/v1/watch)
		}
		info, ok := resourceRequest(ri)
		if ok && (info.Resource == "" || info.Verb == "" && (method == "GET" || method == "POST")) {
			t.Fatalf("%s %s parsed as %+v", method, u, info)
		}
		filters.LongRunning(r)
	})
}
