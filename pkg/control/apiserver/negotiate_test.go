package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
	sigsyaml "sigs.k8s.io/yaml"
)

// What client-go's metadata client sends: protobuf first, which miniapi answers only for
// whole objects.
const (
	metadataAccept     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// withAccept sends every request to h with this Accept header.
func withAccept(accept string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Accept", accept)
		h.ServeHTTP(w, r)
	})
}

func ownedPod(name string) *corev1.Pod {
	pod := podNamed(name, "web")
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs-uid"}}
	return pod
}

// checkPartial checks a PartialObjectMetadata body is what converting the typed object
// gives, in version, with no spec.
func checkPartial(t *testing.T, body []byte, pod *corev1.Pod, version string) {
	t.Helper()
	var got metav1.PartialObjectMetadata
	apitest.DecodeStrict(t, body, &got) // a spec or status would be an unknown field
	want := meta.AsPartialObjectMetadata(pod)
	want.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("PartialObjectMetadata:\n got %+v\nwant %+v", got, want)
	}
	if got.ResourceVersion == "" || got.Labels["app"] != "web" || len(got.OwnerReferences) != 1 {
		t.Fatalf("PartialObjectMetadata lacks resourceVersion, labels or ownerReferences: %s", body)
	}
}

func TestPartialObjectMetadataGetAndList(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b"} {
		w := do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod(name))
		var pod corev1.Pod
		apitest.DecodeStrict(t, w.Body.Bytes(), &pod)
		pods = append(pods, &pod)
	}

	g1 := do(t, withAccept(metadataAccept, h), "GET", "/api/v1/namespaces/default/pods/a", nil)
	if g1.Code != http.StatusOK || g1.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET as PartialObjectMetadata: %d %s %s", g1.Code, g1.Header().Get("Content-Type"), g1.Body)
	}
	checkPartial(t, g1.Body.Bytes(), pods[0], "v1")
	if g2 := do(t, withAccept(metadataAccept, h), "GET", "/api/v1/namespaces/default/pods/a", nil); !bytes.Equal(g1.Body.Bytes(), g2.Body.Bytes()) {
		t.Fatal("two GETs of one version answered different bytes")
	}
	beta := do(t, withAccept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", h), "GET", "/api/v1/namespaces/default/pods/a", nil)
	checkPartial(t, beta.Body.Bytes(), pods[0], "v1beta1")

	w := do(t, withAccept(metadataListAccept, h), "GET", "/api/v1/namespaces/default/pods", nil)
	var list metav1.PartialObjectMetadataList
	apitest.DecodeStrict(t, w.Body.Bytes(), &list)
	if w.Code != http.StatusOK || list.Kind != "PartialObjectMetadataList" || list.APIVersion != "meta.k8s.io/v1" || list.ResourceVersion == "" || len(list.Items) != 2 {
		t.Fatalf("LIST as PartialObjectMetadataList: %d %s", w.Code, w.Body)
	}
	for i, item := range list.Items {
		raw, err := json.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		checkPartial(t, raw, pods[i], "v1")
	}

	// A write answers with the metadata of the typed object it wrote.
	patch := httptest.NewRequest("PATCH", "/api/v1/namespaces/default/pods/b", bytes.NewReader([]byte(`{"metadata":{"labels":{"tier":"front"}}}`)))
	patch.Header.Set("Content-Type", "application/merge-patch+json")
	patch.Header.Set("Accept", metadataAccept)
	pw := httptest.NewRecorder()
	h.ServeHTTP(pw, patch)
	var patched metav1.PartialObjectMetadata
	apitest.DecodeStrict(t, pw.Body.Bytes(), &patched)
	if pw.Code != http.StatusOK || patched.Kind != "PartialObjectMetadata" || patched.Labels["tier"] != "front" || patched.ResourceVersion == pods[1].ResourceVersion {
		t.Fatalf("PATCH answered as PartialObjectMetadata: %d %s", pw.Code, pw.Body)
	}
	stored := do(t, withAccept(metadataAccept, h), "GET", "/api/v1/namespaces/default/pods/b", nil)
	var got any
	if err := json.Unmarshal(stored.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(pw.Body.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET and PATCH disagree on the metadata:\n got %s\nwant %s", stored.Body, pw.Body)
	}
}

func TestPartialObjectMetadataWatch(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	srv := httptest.NewServer(withAccept(metadataAccept, h))
	t.Cleanup(srv.Close)
	w := do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod("a"))
	var pod corev1.Pod
	apitest.DecodeStrict(t, w.Body.Bytes(), &pod)

	events := watchLines(t, srv, "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
	typ, obj := nextEvent(t, events)
	raw, _ := json.Marshal(obj)
	if typ != "ADDED" {
		t.Fatalf("initial event %s %s", typ, raw)
	}
	checkPartial(t, raw, &pod, "v1")
	typ, obj = nextEvent(t, events)
	md, _ := obj["metadata"].(map[string]any)
	if typ != "BOOKMARK" || obj["kind"] != "PartialObjectMetadata" || md["annotations"].(map[string]any)[initialEventsEnd] != "true" {
		t.Fatalf("initial-events-end bookmark: %s %v", typ, obj)
	}

	pod.Labels["tier"] = "front"
	if w := do(t, h, "PUT", "/api/v1/namespaces/default/pods/a", &pod); w.Code != http.StatusOK {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), &pod)
	typ, obj = nextEvent(t, events)
	raw, _ = json.Marshal(obj)
	if typ != "MODIFIED" {
		t.Fatalf("update event %s %s", typ, raw)
	}
	checkPartial(t, raw, &pod, "v1")
}

// An Accept naming only what miniapi cannot produce gets 406 before anything is written, and a
// view of the wrong shape (a list's of one object, one object's of a list) gets 406 too.
func TestNotAcceptable(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod("a"))
	cases := []struct{ method, path, accept string }{
		{"GET", "/api/v1/namespaces/default/pods/a", "application/json;as=Foo;g=meta.k8s.io;v=v1"},
		{"GET", "/api/v1/namespaces/default/pods/a", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2"},
		{"GET", "/api/v1/namespaces/default/pods", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
		{"GET", "/api/v1/namespaces/default/pods?watch=1", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
		{"GET", "/api/v1/namespaces/default/pods/a", "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"},
		{"POST", "/api/v1/namespaces/default/pods", "application/json;as=Foo;g=meta.k8s.io;v=v1"},
		{"GET", "/api/v1/namespaces/default/pods/a", metadataListAccept},
		{"GET", "/api/v1/namespaces/default/pods", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	}
	for _, c := range cases {
		var body any
		if c.method == "POST" {
			body = ownedPod("b")
		}
		w := do(t, withAccept(c.accept, h), c.method, c.path, body)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusNotAcceptable || status.Kind != "Status" || status.Code != http.StatusNotAcceptable || status.Reason != metav1.StatusReasonNotAcceptable {
			t.Errorf("%s %s with Accept %q: %d %s, want a 406 Status", c.method, c.path, c.accept, w.Code, w.Body)
		}
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default/pods/b", nil); w.Code != http.StatusNotFound {
		t.Errorf("a POST refused with 406 created the pod: %d", w.Code)
	}
}

// What client-go's typed clients send: protobuf first, then JSON.
const clientGoAccept = "application/vnd.kubernetes.protobuf,application/json"

// One object and a list go as protobuf to a client that asks for it first, and are the
// objects JSON gives; views, errors and deletecollection go as JSON, which such a client
// accepts too.
func TestProtobufResponses(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	pb := withAccept(clientGoAccept, h)
	fromProtobuf := func(w *httptest.ResponseRecorder, what string) *corev1.Pod {
		t.Helper()
		if ct := w.Header().Get("Content-Type"); ct != runtime.ContentTypeProtobuf {
			t.Fatalf("%s: %d Content-Type %q, want protobuf: %s", what, w.Code, ct, w.Body)
		}
		var pod corev1.Pod
		if err := decodeProtobuf(w.Body.Bytes(), &pod, corev1.SchemeGroupVersion.WithKind("Pod")); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return &pod
	}
	created := do(t, pb, "POST", "/api/v1/namespaces/default/pods", ownedPod("a"))
	if created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	pod := fromProtobuf(created, "create")
	var asJSON corev1.Pod
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), &asJSON)
	if !equality.Semantic.DeepEqual(pod, &asJSON) || pod.UID == "" || pod.ResourceVersion == "" {
		t.Fatalf("protobuf and JSON disagree:\n got %+v\nwant %+v", pod, &asJSON)
	}
	if got := fromProtobuf(do(t, pb, "GET", "/api/v1/namespaces/default/pods/a", nil), "get"); !equality.Semantic.DeepEqual(got, &asJSON) {
		t.Fatalf("GET in protobuf:\n got %+v\nwant %+v", got, &asJSON)
	}
	asJSON.Labels["tier"] = "front"
	if got := fromProtobuf(do(t, pb, "PUT", "/api/v1/namespaces/default/pods/a", &asJSON), "update"); got.Labels["tier"] != "front" {
		t.Fatalf("update in protobuf: %+v", got)
	}

	do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod("b"))
	do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("c", "db"))
	checkProtobufList(t, h, "/api/v1/namespaces/default/pods")
	checkProtobufList(t, h, "/api/v1/pods?labelSelector=app%3Dweb")
	checkProtobufList(t, h, "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dc")
	checkProtobufList(t, h, "/api/v1/namespaces/default/pods?limit=2")
	checkProtobufList(t, h, "/api/v1/namespaces/default/pods?limit=1&labelSelector=app%3Dweb")
	checkProtobufList(t, h, "/api/v1/namespaces/other/pods")

	for _, c := range []struct{ what, method, path string }{
		{"error", "GET", "/api/v1/namespaces/default/pods/missing"},
		{"deletecollection", "DELETE", "/api/v1/namespaces/default/pods"},
	} {
		if w := do(t, pb, c.method, c.path, nil); w.Header().Get("Content-Type") != "application/json" || !json.Valid(w.Body.Bytes()) {
			t.Errorf("%s: Content-Type %q, want JSON: %s", c.what, w.Header().Get("Content-Type"), w.Body)
		}
	}
	table := do(t, withAccept("application/json;as=Table;g=meta.k8s.io;v=v1,"+clientGoAccept, h), "GET", "/api/v1/namespaces/default/pods", nil)
	if table.Header().Get("Content-Type") != "application/json" || !bytes.Contains(table.Body.Bytes(), []byte(`"kind":"Table"`)) {
		t.Errorf("a Table asked for first: %s", table.Body)
	}
}

// checkProtobufList checks that the protobuf LIST of path, asked for as client-go's typed
// clients ask, decodes to the PodList its JSON LIST gives: items, resourceVersion, continue
// token and remaining count.
func checkProtobufList(t *testing.T, h http.Handler, path string) {
	t.Helper()
	w := do(t, withAccept(clientGoAccept, h), "GET", path, nil)
	if ct := w.Header().Get("Content-Type"); w.Code != http.StatusOK || ct != runtime.ContentTypeProtobuf {
		t.Fatalf("LIST %s: %d Content-Type %q, want protobuf: %s", path, w.Code, ct, w.Body)
	}
	var got corev1.PodList
	if err := decodeProtobuf(w.Body.Bytes(), &got, corev1.SchemeGroupVersion.WithKind("PodList")); err != nil {
		t.Fatalf("LIST %s: %v", path, err)
	}
	var want corev1.PodList
	apitest.DecodeStrict(t, do(t, h, "GET", path, nil).Body.Bytes(), &want)
	// TypeMeta is the envelope's in protobuf, and an item's message has none.
	want.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	for i := range want.Items {
		want.Items[i].TypeMeta = metav1.TypeMeta{}
	}
	if !equality.Semantic.DeepEqual(&got, &want) {
		t.Fatalf("LIST %s in protobuf:\n got %+v\nwant %+v", path, got, want)
	}
}

// The protobuf LIST is, byte for byte, what the protobuf serializer makes of the typed list
// of the items, for every resource that answers in protobuf: its list kind's field numbers
// are the ones protobufList writes.
func TestProtobufListIsTheSerializers(t *testing.T) {
	s, _ := newCachedServer(t)
	checked := 0
	for res, ok := range s.protobufLists {
		if !ok {
			continue
		}
		checked++
		listGVK := res.GroupVersion().WithKind(res.Kind + "List")
		list, err := scheme.Scheme.New(listGVK)
		if err != nil {
			t.Fatalf("%s: %v", res.Kind, err)
		}
		var items []runtime.Object
		var envelopes [][]byte
		for _, name := range []string{"a", "b"} {
			obj, err := res.New()
			if err != nil {
				t.Fatal(err)
			}
			mustMeta(obj).SetName(name)
			mustMeta(obj).SetResourceVersion("7")
			obj.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind))
			envelope, err := encodeProtobuf(obj)
			if err != nil {
				t.Fatalf("%s: %v", res.Kind, err)
			}
			items, envelopes = append(items, obj), append(envelopes, envelope)
		}
		if err := meta.SetList(list, items); err != nil {
			t.Fatalf("%s: %v", res.Kind, err)
		}
		remaining := int64(3)
		listMeta := metav1.ListMeta{ResourceVersion: "9", Continue: "token", RemainingItemCount: &remaining}
		*mustListMeta(t, list) = listMeta
		list.GetObjectKind().SetGroupVersionKind(listGVK)
		want, err := encodeProtobuf(list)
		if err != nil {
			t.Fatalf("%s: %v", listGVK.Kind, err)
		}
		var got bytes.Buffer
		if err := protobufList(&got, listGVK, listMeta, envelopes); err != nil {
			t.Fatalf("%s: %v", listGVK.Kind, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: protobufList wrote\n%q\nthe serializer\n%q", listGVK.Kind, got.Bytes(), want)
		}
	}
	if checked < 40 {
		t.Errorf("%d resources answer lists in protobuf, want every built-in kind's", checked)
	}
}

// mustListMeta is the ListMeta field of a typed list.
func mustListMeta(t *testing.T, list runtime.Object) *metav1.ListMeta {
	t.Helper()
	field := reflect.ValueOf(list).Elem().FieldByName("ListMeta")
	if !field.IsValid() {
		t.Fatalf("%T has no ListMeta", list)
	}
	return field.Addr().Interface().(*metav1.ListMeta)
}

func TestStoredMetadata(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"Pod","metadata":{"name":"a"},"spec":{}}`:                `{"name":"a","resourceVersion":"42"}`,
		`{"kind":"Pod","metadata":{"name":"a","uid":"u","generation":2}}`: `{"name":"a","uid":"u","resourceVersion":"42","generation":2}`,
		`{"metadata":{}}`: `{"resourceVersion":"42"}`,
		`{ "spec": {"metadata": {"x": 1}}, "metadata" : { "n": 1 } }`: `{"resourceVersion":"42", "n": 1 }`,
		`{"kind":"Pod"}`:          "",
		`{"metadata":"a"}`:        "",
		`{"metadata":{"name":"a"`: "",
		`["metadata",{}]`:         "",
	} {
		got, ok := storedMetadata([]byte(in), 42)
		if ok != (want != "") || string(got) != want {
			t.Errorf("storedMetadata(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
}

// A watch goes as length-prefixed protobuf WatchEvents to a client that asks for protobuf
// first, and client-go's own stream decoder reads from it the objects JSON gives: initial
// events, the initial-events-end bookmark, changes, and the 410 Status of an expired watch.
func TestProtobufWatch(t *testing.T) {
	s, st := newCachedServer(t)
	h := s.Handler()
	srv := httptest.NewServer(withAccept(clientGoAccept, h))
	t.Cleanup(srv.Close)
	var pod corev1.Pod
	apitest.DecodeStrict(t, do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod("a")).Body.Bytes(), &pod)
	pod.TypeMeta = metav1.TypeMeta{} // client-go's decoder clears it, as for every typed object

	events := protobufWatch(t, srv, "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
	if ev := nextTyped(t, events); ev.Type != watch.Added || !equality.Semantic.DeepEqual(ev.Object, &pod) {
		t.Fatalf("initial event %s %+v, want ADDED %+v", ev.Type, ev.Object, &pod)
	}
	if ev := nextTyped(t, events); ev.Type != watch.Bookmark || ev.Object.(*corev1.Pod).Annotations[initialEventsEnd] != "true" {
		t.Fatalf("initial-events-end bookmark: %s %+v", ev.Type, ev.Object)
	}
	pod.Labels["tier"] = "front"
	if w := do(t, h, "PUT", "/api/v1/namespaces/default/pods/a", &pod); w.Code != http.StatusOK {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), &pod)
	pod.TypeMeta = metav1.TypeMeta{}
	if ev := nextTyped(t, events); ev.Type != watch.Modified || !equality.Semantic.DeepEqual(ev.Object, &pod) {
		t.Fatalf("update event %s %+v, want MODIFIED %+v", ev.Type, ev.Object, &pod)
	}

	rev := st.Revision()
	if err := st.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	expired := protobufWatch(t, srv, fmt.Sprintf("/api/v1/namespaces/default/pods?watch=1&resourceVersion=%d", rev-1))
	if ev := nextTyped(t, expired); ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
		t.Fatalf("watch from a compacted revision: %s %+v", ev.Type, ev.Object)
	}
}

// protobufWatch reads a watch stream as client-go does: the decoder its REST client picks
// for the response's Content-Type.
func protobufWatch(t *testing.T, srv *httptest.Server, path string) <-chan watch.Event {
	t.Helper()
	resp := openWatch(t, srv, path)
	mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != runtime.ContentTypeProtobuf || params["stream"] != "watch" {
		t.Fatalf("watch Content-Type %q, want protobuf;stream=watch", resp.Header.Get("Content-Type"))
	}
	codecs := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	objects, framing, framer, err := runtime.NewClientNegotiator(codecs, corev1.SchemeGroupVersion).StreamDecoder(mediaType, params)
	if err != nil {
		t.Fatal(err)
	}
	w := watch.NewStreamWatcher(restwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(resp.Body), framing), objects), apierrors.NewClientErrorReporter(500, "GET", "test"))
	t.Cleanup(w.Stop)
	return w.ResultChan()
}

func nextTyped(t *testing.T, events <-chan watch.Event) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	return watch.Event{}
}

// YAML is answered as kube-apiserver answers it: GET, LIST (their Tables too) and
// create in the bytes its YAML serializer makes of the JSON (sigs.k8s.io/yaml's
// JSONToYAML), errors as a YAML Status; a watch has no YAML framing: 406, naming the
// stream media types, in YAML. JSON first of equal q stays JSON; an Accept naming only
// what cannot be produced gets 406 in JSON naming YAML among the accepted types.
func TestYAMLResponses(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	do(t, h, "POST", "/api/v1/namespaces/default/pods", ownedPod("a"))
	asYAML := withAccept("application/yaml", h)
	sameAsJSON := func(path, accept string) {
		t.Helper()
		w := do(t, asYAML, "GET", path, nil)
		if accept != "application/yaml" {
			w = do(t, withAccept(accept, h), "GET", path, nil)
		}
		jsonAccept := strings.Replace(accept, "application/yaml", "application/json", 1)
		want, err := sigsyaml.JSONToYAML(do(t, withAccept(jsonAccept, h), "GET", path, nil).Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/yaml" || w.Body.String() != string(want) {
			t.Errorf("GET %s with Accept %s: %d %q\n%s\nwant\n%s", path, accept, w.Code, w.Header().Get("Content-Type"), w.Body, want)
		}
	}
	sameAsJSON("/api/v1/namespaces/default/pods/a", "application/yaml")
	sameAsJSON("/api/v1/namespaces/default/pods", "application/yaml")
	sameAsJSON("/api/v1/namespaces/default/pods", "application/yaml;as=Table;g=meta.k8s.io;v=v1")

	created := do(t, asYAML, "POST", "/api/v1/namespaces/default/pods", ownedPod("b"))
	var pod corev1.Pod
	if err := sigsyaml.UnmarshalStrict(created.Body.Bytes(), &pod); err != nil || created.Code != http.StatusCreated ||
		created.Header().Get("Content-Type") != "application/yaml" || pod.Name != "b" {
		t.Errorf("create with Accept application/yaml: %d %q %v\n%s", created.Code, created.Header().Get("Content-Type"), err, created.Body)
	}

	yamlStatus := func(w *httptest.ResponseRecorder, what string, code int, message string) {
		t.Helper()
		var status metav1.Status
		if err := sigsyaml.UnmarshalStrict(w.Body.Bytes(), &status); err != nil || w.Code != code || w.Header().Get("Content-Type") != "application/yaml" ||
			status.Kind != "Status" || status.Code != int32(code) || status.Message != message {
			t.Errorf("%s: %d %q %v\n%s\nwant a YAML Status %d %q", what, w.Code, w.Header().Get("Content-Type"), err, w.Body, code, message)
		}
	}
	yamlStatus(do(t, asYAML, "GET", "/api/v1/namespaces/default/pods/missing", nil), "GET of a missing pod", http.StatusNotFound, `pods "missing" not found`)
	yamlStatus(do(t, asYAML, "GET", "/api/v1/namespaces/default/pods?watch=1", nil), "watch", http.StatusNotAcceptable,
		"only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")

	if w := do(t, withAccept("application/json, application/yaml", h), "GET", "/api/v1/namespaces/default/pods/a", nil); w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("JSON first of equal q: %q", w.Header().Get("Content-Type"))
	}
	w := do(t, withAccept("text/plain", h), "GET", "/api/v1/namespaces/default/pods/a", nil)
	status := apitest.ResponseStatus(t, w.Body.Bytes())
	if want := "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"; w.Code != http.StatusNotAcceptable || status.Message != want {
		t.Errorf("Accept text/plain: %d %q, want 406 %q", w.Code, status.Message, want)
	}
}
