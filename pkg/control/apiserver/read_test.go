package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newCachedServer is a Server reading through the watch cache, as miniapi's is.
func newCachedServer(t testing.TB) (*Server, *store.Cache) {
	t.Helper()
	st := storetest.Cached(t)
	s := newTestServer(t, st, "10.96.0.0/12", "", 0)
	if err := s.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, st
}

func do(t testing.TB, h http.Handler, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func podNamed(name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// LIST and GET send the shared encodings of the objects in exactly the bytes encoding the
// typed objects would give, and pages cover every object once.
func TestListAndGetEncoding(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	var names []string
	for i := range 7 {
		name := fmt.Sprintf("p%d", i)
		if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed(name, []string{"a", "b"}[i%2])); w.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, w.Code, w.Body)
		}
		names = append(names, name)
	}

	w := do(t, h, "GET", "/api/v1/namespaces/default/pods", nil)
	var list corev1.PodList
	apitest.DecodeStrict(t, w.Body.Bytes(), &list)
	if list.Kind != "PodList" || list.APIVersion != "v1" || list.ResourceVersion == "" || len(list.Items) != len(names) {
		t.Fatalf("list: kind %q apiVersion %q resourceVersion %q, %d items", list.Kind, list.APIVersion, list.ResourceVersion, len(list.Items))
	}
	typed, err := json.Marshal(&list)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(typed, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("list body differs from the typed list's encoding:\n got %s\nwant %s", w.Body, typed)
	}

	g1 := do(t, h, "GET", "/api/v1/namespaces/default/pods/p3", nil)
	var pod corev1.Pod
	apitest.DecodeStrict(t, g1.Body.Bytes(), &pod)
	if pod.Name != "p3" || pod.Kind != "Pod" || pod.ResourceVersion != list.Items[3].ResourceVersion {
		t.Fatalf("get p3: %s/%s %s at %s, listed at %s", pod.APIVersion, pod.Kind, pod.Name, pod.ResourceVersion, list.Items[3].ResourceVersion)
	}
	if g2 := do(t, h, "GET", "/api/v1/namespaces/default/pods/p3", nil); !bytes.Equal(g1.Body.Bytes(), g2.Body.Bytes()) {
		t.Fatal("two GETs of one version answered different bytes")
	}

	var paged []string
	next := ""
	for page := 0; ; page++ {
		w := do(t, h, "GET", "/api/v1/namespaces/default/pods?limit=3&continue="+url.QueryEscape(next), nil)
		var l corev1.PodList
		apitest.DecodeStrict(t, w.Body.Bytes(), &l)
		// remainingItemCount: what the pages after this one hold (the chunking conformance
		// test sums it), absent on the last page.
		switch left := len(names) - len(paged) - len(l.Items); {
		case l.Continue != "" && (l.RemainingItemCount == nil || *l.RemainingItemCount != int64(left)):
			t.Fatalf("page %d: remainingItemCount %v, want %d", page, l.RemainingItemCount, left)
		case l.Continue == "" && l.RemainingItemCount != nil:
			t.Fatalf("last page: remainingItemCount %d, want none", *l.RemainingItemCount)
		}
		for _, p := range l.Items {
			paged = append(paged, p.Name)
		}
		if next = l.Continue; next == "" || page > len(names) {
			break
		}
	}
	if !slices.Equal(paged, names) {
		t.Fatalf("pages of 3 listed %v, want %v", paged, names)
	}

	w = do(t, h, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Da", nil)
	var selected corev1.PodList
	apitest.DecodeStrict(t, w.Body.Bytes(), &selected)
	if len(selected.Items) != 4 || selected.Items[1].Name != "p2" {
		t.Fatalf("labelSelector app=a listed %d pods", len(selected.Items))
	}
}

// openWatch starts a watch request; the test's end ends it.
func openWatch(t *testing.T, srv *httptest.Server, path string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// watchLines reads a watch stream's events, one JSON object a line.
func watchLines(t *testing.T, srv *httptest.Server, path string) <-chan metav1.WatchEvent {
	t.Helper()
	resp := openWatch(t, srv, path)
	out := make(chan metav1.WatchEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		lines := bufio.NewScanner(resp.Body)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			var ev metav1.WatchEvent
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				t.Errorf("watch line %q: %v", lines.Text(), err)
				return
			}
			out <- ev
		}
	}()
	return out
}

func nextEvent(t *testing.T, events <-chan metav1.WatchEvent) (string, map[string]any) {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("watch ended")
		}
		var obj map[string]any
		if err := json.Unmarshal(ev.Object.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		return ev.Type, obj
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event in 10s")
	}
	return "", nil
}

// A watch with a label selector sees an object leave the selection as DELETED, with the
// object as it was when it last matched at the revision of the change (kube's cacher sends
// the previous object); a watch from a compacted revision gets a 410 Status client-go can
// decode.
func TestWatchSelectorsAndExpiry(t *testing.T) {
	s, st := newCachedServer(t)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the watches' cleanups, which end them
	h := s.Handler()
	w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("web", "a"))
	var pod corev1.Pod
	apitest.DecodeStrict(t, w.Body.Bytes(), &pod)

	events := watchLines(t, srv, "/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Da&resourceVersion="+pod.ResourceVersion)
	pod.Labels["app"] = "b"
	w = do(t, h, "PUT", "/api/v1/namespaces/default/pods/web", &pod)
	if w.Code != http.StatusOK {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	var updated corev1.Pod
	apitest.DecodeStrict(t, w.Body.Bytes(), &updated)
	typ, obj := nextEvent(t, events)
	meta := obj["metadata"].(map[string]any)
	if typ != "DELETED" || meta["name"] != "web" {
		t.Fatalf("pod leaving the selection: %s %v", typ, obj)
	}
	if labels := meta["labels"].(map[string]any); labels["app"] != "a" || meta["resourceVersion"] != updated.ResourceVersion {
		t.Errorf("pod leaving the selection: labels %v at %v, want app=a (as it last matched) at %s", labels, meta["resourceVersion"], updated.ResourceVersion)
	}

	rev := st.Revision()
	if err := st.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("later", "a")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	expired := watchLines(t, srv, fmt.Sprintf("/api/v1/namespaces/default/pods?watch=1&resourceVersion=%d", rev-1))
	typ, obj = nextEvent(t, expired)
	if typ != "ERROR" || obj["kind"] != "Status" || obj["apiVersion"] != "v1" || obj["code"] != float64(http.StatusGone) || obj["reason"] != "Expired" {
		t.Fatalf("watch from a compacted revision: %s %v", typ, obj)
	}
	// kube's watch cache names the oldest revision a watch can resume from, not the newest.
	if want := fmt.Sprintf("too old resource version: %d (%d)", rev-1, rev); obj["message"] != want {
		t.Errorf("watch from a compacted revision: %q, want %q", obj["message"], want)
	}
}

// Lists of a compacted revision are 410 Expired with Kubernetes' messages; a continue token's
// answer carries a token that goes on at the present, and a new list works.
func TestListOfCompactedRevision(t *testing.T) {
	s, st := newCachedServer(t)
	h := s.Handler()
	for _, name := range []string{"p0", "p1", "p2"} {
		if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed(name, "a")); w.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, w.Code, w.Body)
		}
	}
	var first corev1.PodList
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods?limit=1", nil).Body.Bytes(), &first)
	if first.Continue == "" {
		t.Fatal("a list of 3 pods with limit 1 has no continue token")
	}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("p3", "a")); w.Code != http.StatusCreated {
		t.Fatalf("create p3: %d %s", w.Code, w.Body)
	}
	if err := st.Compact(t.Context(), st.Revision()); err != nil {
		t.Fatal(err)
	}

	expired := func(path, message string) metav1.Status {
		t.Helper()
		w := do(t, h, "GET", path, nil)
		status := apitest.ResponseStatus(t, w.Body.Bytes())
		if w.Code != http.StatusGone || status.Reason != metav1.StatusReasonExpired || status.Message != message {
			t.Fatalf("GET %s: %d %s %q, want 410 Expired %q", path, w.Code, status.Reason, status.Message, message)
		}
		return status
	}
	expired("/api/v1/namespaces/default/pods?resourceVersionMatch=Exact&resourceVersion="+first.ResourceVersion, listExpired)
	expired("/api/v1/namespaces/default/pods?limit=1&resourceVersion="+first.ResourceVersion, listExpired)
	status := expired("/api/v1/namespaces/default/pods?limit=1&continue="+url.QueryEscape(first.Continue), continueExpired)
	if status.Continue == "" {
		t.Fatal("the 410 of a compacted continue token carries no token to go on with")
	}
	// The token of the 410 goes on after p0 at the present: p1, p2 and p3.
	var rest []string
	for next := status.Continue; next != ""; {
		var page corev1.PodList
		apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods?limit=2&continue="+url.QueryEscape(next), nil).Body.Bytes(), &page)
		for _, p := range page.Items {
			rest = append(rest, p.Name)
		}
		if next = page.Continue; len(rest) > 4 {
			break
		}
	}
	if !slices.Equal(rest, []string{"p1", "p2", "p3"}) {
		t.Errorf("pages from the 410's token: %v, want [p1 p2 p3]", rest)
	}
	var fresh corev1.PodList
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods", nil).Body.Bytes(), &fresh)
	if len(fresh.Items) != 4 {
		t.Errorf("a new list after compaction: %d pods, want 4", len(fresh.Items))
	}
}

// A LIST's items of a built-in kind carry no kind and apiVersion (the list's do), a GET's
// object does, and both put the resourceVersion after the uid, as kube-apiserver's encoding
// of the typed objects writes them.
func TestListItemsAsKubeAPIServer(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const cms = "/api/v1/namespaces/default/configmaps"
	if w := do(t, h, "POST", cms, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	item := regexp.MustCompile(`^\{"metadata":\{"name":"a","namespace":"default","uid":"[-0-9a-f]+","resourceVersion":"[0-9]+","creationTimestamp":"[^"]+".*\},"data":\{"k":"v"\}\}$`)
	list := do(t, h, "GET", cms+"?fieldSelector=metadata.name=a", nil)
	var items struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(list.Body.Bytes(), &items); err != nil || items.Kind != "ConfigMapList" || len(items.Items) != 1 || !item.Match(items.Items[0]) {
		t.Errorf("LIST: %s (%v), want one item matching %s", list.Body, err, item)
	}
	get := do(t, h, "GET", cms+"/a", nil)
	if want := `^\{"kind":"ConfigMap","apiVersion":"v1",` + strings.TrimPrefix(item.String(), `^\{`); !regexp.MustCompile(want).Match(bytes.TrimSpace(get.Body.Bytes())) {
		t.Errorf("GET: %s, want it to match %s", get.Body, want)
	}
}
