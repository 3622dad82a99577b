package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// A watch that meets an object it cannot send ends with an ERROR event rather than going on
// without it; client-go's informer then lists again, and once the object is readable its
// cache has it: it never silently misses an object.
func TestUndecodableEventEndsTheWatchAndClientGoRelists(t *testing.T) {
	s, st := newCachedServer(t)
	var lists, watches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/pods" {
			if r.URL.Query().Get("watch") == "true" {
				watches.Add(1)
			} else {
				lists.Add(1)
			}
		}
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h := s.Handler()
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("good", "a")); w.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}

	// A raw watch sees the ERROR event and the end of the stream.
	events := watchLines(t, srv, "/api/v1/namespaces/default/pods?watch=1&resourceVersion="+strconv.FormatInt(st.Revision(), 10))
	const good = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bad","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	corrupt := good[:len(good)/2] // as a torn write would leave it
	if _, err := st.Create(context.Background(), "/registry/core/pods/default/bad", []byte(corrupt)); err != nil {
		t.Fatal(err)
	}
	typ, obj := nextEvent(t, events)
	if typ != "ERROR" || obj["kind"] != "Status" || obj["code"] != float64(http.StatusInternalServerError) ||
		!strings.Contains(obj["message"].(string), "/registry/core/pods/default/bad") {
		t.Fatalf("event for an undecodable object: %s %v", typ, obj)
	}
	select {
	case line, ok := <-events:
		if ok {
			t.Fatalf("the stream went on after its ERROR event: %s %s", line.Type, line.Object.Raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after its ERROR event")
	}

	// An informer started now lists (failing while the object is unreadable) until the
	// object is fixed, then has it.
	if _, _, err := st.Delete(context.Background(), "/registry/core/pods/default/bad", 0); err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		t.Fatal("informer did not sync")
	}
	waitFor(t, "the informer's watch", func() bool { return watches.Load() >= 1 })
	listsBefore := lists.Load()
	if _, err := st.Create(context.Background(), "/registry/core/pods/default/bad", []byte(corrupt)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "client-go to list again", func() bool { return lists.Load() > listsBefore })
	kv, err := st.Get(context.Background(), "/registry/core/pods/default/bad")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := st.Update(context.Background(), "/registry/core/pods/default/bad", []byte(good), kv.Revision)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fixed object in the informer's cache", func() bool {
		obj, ok, _ := pods.GetStore().GetByKey("default/bad")
		return ok && obj.(*corev1.Pod).ResourceVersion == strconv.FormatInt(rev, 10)
	})
	t.Logf("informer LISTs: %d before the undecodable object, %d in all; watches: %d", listsBefore, lists.Load(), watches.Load())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
