package apiserver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resourceVersion goes where kube-apiserver's encoding puts it: after ObjectMeta's name,
// generateName, namespace, selfLink and uid. A built-in kind's LIST item drops kind and
// apiVersion when only they come before its metadata; a custom resource's keeps them.
func TestLayoutOf(t *testing.T) {
	for _, tc := range []struct {
		in         string
		custom     bool
		want, item string // "": not laid out
	}{
		{`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"d","uid":"u","generation":1,"labels":{"uid":"x"}},"spec":{}}`, false,
			`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"d","uid":"u","resourceVersion":"42","generation":1,"labels":{"uid":"x"}},"spec":{}}`,
			`{"metadata":{"name":"a","namespace":"d","uid":"u","resourceVersion":"42","generation":1,"labels":{"uid":"x"}},"spec":{}}`},
		{`{"kind":"Pod","metadata":{"creationTimestamp":null,"name":"a"}}`, false,
			`{"kind":"Pod","metadata":{"resourceVersion":"42","creationTimestamp":null,"name":"a"}}`,
			`{"metadata":{"resourceVersion":"42","creationTimestamp":null,"name":"a"}}`},
		{`{"metadata":{"name":"a"}}`, false, `{"metadata":{"name":"a","resourceVersion":"42"}}`, `{"metadata":{"name":"a","resourceVersion":"42"}}`},
		{`{"metadata":{}}`, false, `{"metadata":{"resourceVersion":"42"}}`, `{"metadata":{"resourceVersion":"42"}}`},
		{`{ "spec": {"metadata": {"x": 1}}, "metadata" : { "n": 1 } }`, false,
			`{ "spec": {"metadata": {"x": 1}}, "metadata" : {"resourceVersion":"42", "n": 1 } }`,
			`{ "spec": {"metadata": {"x": 1}}, "metadata" : {"resourceVersion":"42", "n": 1 } }`},
		{`{"metadata" : { "name": "a" , "x": 1}}`, false, `{"metadata" : { "name": "a","resourceVersion":"42" , "x": 1}}`, `{"metadata" : { "name": "a","resourceVersion":"42" , "x": 1}}`},
		{`{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a","uid":"u"},"spec":{}}`, true,
			`{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a","uid":"u","resourceVersion":"42"},"spec":{}}`,
			`{"apiVersion":"x.io/v1","kind":"W","metadata":{"name":"a","uid":"u","resourceVersion":"42"},"spec":{}}`},
		{`{"kind":"Pod","metad\u0061ta":{"name":"a"}}`, false, `{"kind":"Pod","metad\u0061ta":{"name":"a","resourceVersion":"42"}}`, `{"kind":"Pod","metad\u0061ta":{"name":"a","resourceVersion":"42"}}`},
		{`{"kind":"Pod"}`, false, "", ""},
		{`{"metadata":"a"}`, false, "", ""},
		{`{"metadata":{"name":"a"}`, false, "", ""},
		{`["metadata",{}]`, false, "", ""},
		{`{"kind":"Pod","metadata":{"a":1}}x`, false, "", ""},
	} {
		l, ok := layoutOf([]byte(tc.in), tc.custom)
		if ok != (tc.want != "") {
			t.Errorf("layoutOf(%s) = %v, want %v", tc.in, ok, tc.want != "")
			continue
		}
		if !ok {
			continue
		}
		b := []byte(tc.in)
		rv := resourceVersionField(b, l.resourceVersion, 42)
		if got := string(b[:l.resourceVersion]) + string(rv) + string(b[l.resourceVersion:]); got != tc.want {
			t.Errorf("%s with resourceVersion 42 = %s, want %s", tc.in, got, tc.want)
		}
		item := tc.want
		if l.item != 0 { // as listItemPieces reads it
			item = "{" + string(b[l.item:l.resourceVersion]) + string(rv) + string(b[l.resourceVersion:])
		}
		if item != tc.item {
			t.Errorf("%s as a LIST item = %s, want %s", tc.in, item, tc.item)
		}
	}
}

// Readers of one version's bytes share what is derived from them; other bytes, even equal,
// do not; the entry goes once the bytes are collected. Its JSON is made from the stored
// bytes each time: only where the resourceVersion goes is kept.
func TestEncodingsShareByTheValuesBytes(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	res, _ := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	var e encodings
	value := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default"}}`)
	a, b := e.object(res, value, 7), e.object(res, value, 7)
	ja, err := a.JSON()
	if err != nil {
		t.Fatal(err)
	}
	jb, _ := b.JSON()
	if a.derived != b.derived || !a.json.done.Load() {
		t.Fatal("two readers of the same bytes derived their JSON twice")
	}
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"7"}}`; string(ja) != want || string(jb) != want {
		t.Fatalf("JSON %s and %s, want %s", ja, jb, want)
	}
	if unsafe.SliceData(ja) == unsafe.SliceData(jb) || a.json.v.whole != nil {
		t.Fatal("a copy of the JSON was kept")
	}
	if c := e.object(res, bytes.Clone(value), 7); c.derived == a.derived {
		t.Fatal("other bytes shared a derivation")
	}
	if d := e.object(res, value, 8); d.derived == a.derived {
		t.Fatal("another revision shared a derivation")
	}
	value, a, b = nil, nil, nil
	for i := 0; i < 20 && entries(&e) > 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := entries(&e); n != 0 {
		t.Errorf("%d entries left after their bytes were collected", n)
	}
}

func entries(e *encodings) int {
	n := 0
	e.m.Range(func(any, any) bool { n++; return true })
	return n
}

// While a protobuf watch of a resource is open, each write derives the protobuf its watch
// event carries from the object it wrote, and that protobuf is the one decoding the stored
// JSON gives: a create, an update, a status update, a binding, an Event with an eventTime.
// Without such a watch nothing is derived at write time.
func TestWritesDeriveTheProtobufOfTheirWatchEvent(t *testing.T) {
	s, st := newCachedServer(t)
	h := s.Handler()
	pods, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("pods"))
	events, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("events"))
	stopWatching := s.encodings.watching(pods)
	defer stopWatching()
	s.encodings.watching(events)()

	check := func(what string, res *registry.Resource, name string, derived bool) {
		t.Helper()
		// A List waits for the cache to hold the write: the bytes its watch event carries.
		kvs, _, err := st.List(context.Background(), generic.Key(res, "default", name))
		if err != nil || len(kvs) != 1 {
			t.Fatalf("%s: %v %v", what, kvs, err)
		}
		kv := kvs[0]
		o := s.encodings.object(res, kv.Value, kv.Revision)
		if got := o.protobuf != nil; got != derived {
			t.Fatalf("%s: protobuf derived at write time: %v, want %v", what, got, derived)
		}
		obj, err := generic.Decode(res, kv.Value, kv.Revision)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := encodeProtobuf(obj)
		if got, err := o.Protobuf(); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: the protobuf of the written object is not that of the stored one (%v)", what, err)
		}
	}
	pod := ownedPod("a")
	pod.Annotations = map[string]string{"note": "ünïcode"}
	pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5"), corev1.ResourceMemory: resource.MustParse("1.5Gi")}
	mustCode(t, do(t, h, "POST", "/api/v1/namespaces/default/pods", pod), http.StatusCreated)
	check("create", pods, "a", true)

	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), pod)
	pod.Labels["tier"] = "front"
	mustCode(t, do(t, h, "PUT", "/api/v1/namespaces/default/pods/a", pod), http.StatusOK)
	check("update", pods, "a", true)

	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
	mustCode(t, do(t, h, "POST", "/api/v1/namespaces/default/pods/a/binding", binding), http.StatusCreated)
	check("binding", pods, "a", true)

	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), pod)
	pod.Status.Phase, pod.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: time.Now()}
	mustCode(t, do(t, h, "PUT", "/api/v1/namespaces/default/pods/a/status", pod), http.StatusOK)
	check("status update", pods, "a", true)

	// A protobuf response to a write sends the encoding the write's watch event shares.
	req := s.encodings.withSharedWrite(httptest.NewRequest("POST", "/", nil), pods, representation{protobuf: true})
	b := ownedPod("b")
	b.Namespace = "default"
	created, err := s.objects.Create(req.Context(), pods, b, generic.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("create of b", pods, "b", true)
	want, _ := encodeProtobuf(created)
	if raw, ok := sharedProtobuf(req, pods, created); !ok || !bytes.Equal(raw, want) {
		t.Fatalf("the write's response does not share its stored protobuf (%v)", ok)
	}
	if _, ok := sharedProtobuf(req, events, created); ok {
		t.Fatal("another resource's response shared the write's protobuf")
	}
	older := created.DeepCopyObject()
	generic.SetResourceVersion(older, 1)
	if _, ok := sharedProtobuf(req, pods, older); ok {
		t.Fatal("another version's response shared the write's protobuf")
	}
	var viaHTTP corev1.Pod
	resp := do(t, withAccept(clientGoAccept, h), "POST", "/api/v1/namespaces/default/pods", ownedPod("c"))
	if err := decodeProtobuf(resp.Body.Bytes(), &viaHTTP, corev1.SchemeGroupVersion.WithKind("Pod")); err != nil || resp.Code != http.StatusCreated {
		t.Fatalf("protobuf create: %d %v", resp.Code, err)
	}
	var asJSON corev1.Pod
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/c", nil).Body.Bytes(), &asJSON)
	if !equality.Semantic.DeepEqual(&viaHTTP, &asJSON) {
		t.Fatalf("the protobuf response to a create is not the stored pod:\n got %+v\nwant %+v", &viaHTTP, &asJSON)
	}

	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "a.1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a"},
		Reason: "Tested", Message: "m", Type: corev1.EventTypeNormal, EventTime: metav1.NowMicro(), Action: "Test", ReportingController: "test", ReportingInstance: "test-1"}
	mustCode(t, do(t, h, "POST", "/api/v1/namespaces/default/events", event), http.StatusCreated)
	check("an Event, no protobuf watch of events", events, "a.1", false)
}

func mustCode(t *testing.T, w *httptest.ResponseRecorder, code int) {
	t.Helper()
	if w.Code != code {
		t.Fatalf("%d %s, want %d", w.Code, w.Body, code)
	}
}
