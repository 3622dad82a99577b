package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// gate sits in a client's transport: while closed it holds the client's requests, so a
// test decides when an informer reconnects. It logs the requests it lets through.
type gate struct {
	next http.RoundTripper
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
	log  []string
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	g.mu.Lock()
	g.log = append(g.log, requestKind(req))
	g.mu.Unlock()
	return g.next.RoundTrip(req)
}

// requestKind tells a fresh read of a collection ("list": a LIST, or a watch that starts
// with the current state) from a watch resuming at a revision ("resume").
func requestKind(req *http.Request) string {
	q := req.URL.Query()
	switch {
	case q.Get("watch") != "true" && q.Get("watch") != "1":
		return "list " + req.URL.Path
	case q.Get("sendInitialEvents") == "true" || q.Get("resourceVersion") == "" || q.Get("resourceVersion") == "0":
		return "list " + req.URL.Path + " (watch)"
	default:
		return "resume " + req.URL.Path + " from " + q.Get("resourceVersion")
	}
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
	g.log = nil
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

func (g *gate) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log)
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gen": "1"}},
		// No scheduler serves this name: the test watches the API, not scheduling.
		Spec: corev1.PodSpec{SchedulerName: "test-none", Containers: []corev1.Container{{Name: "c", Image: "localhost/minik8s/busybox:v1"}}},
	}
}

// An informer keeps working across miniapi restarts: it resumes its watch where it was when
// the store still has the changes since, and relists after the 410 it gets when it does not.
func TestInformerAcrossRestartAndCompaction(t *testing.T) {
	const history = 20
	m := newRestartable(t, func(o *Options) { o.WatchHistory = history })
	c := m.start()
	cfg := c.adminConfig(t)
	g := newGate()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { g.next = rt; return g }
	informed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactoryWithOptions(informed, 0, informers.WithNamespace("default"))
	pods := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		t.Fatal("informer did not sync")
	}
	pods2 := c.client.CoreV1().Pods("default")
	if _, err := pods2.Create(ctx, testPod("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, pods, []string{"a"}, nil)

	// Restart while the informer is held back, with fewer changes than the history keeps.
	g.close()
	m.stop()
	c = m.start()
	pods2 = c.client.CoreV1().Pods("default")
	a, err := pods2.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Labels["gen"] = "2"
	if _, err := pods2.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods2.Create(ctx, testPod("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.release()
	waitInformer(t, pods, []string{"a", "b"}, map[string]string{"a": "2"})
	if reqs := g.requests(); len(reqs) == 0 || !strings.HasPrefix(reqs[0], "resume") || slices.ContainsFunc(reqs, isList) {
		t.Fatalf("after a restart within the history the informer should only resume its watch; requests: %q", reqs)
	}

	// Restart again, and make more changes than the history keeps before the informer is back.
	g.close()
	m.stop()
	c = m.start()
	pods2 = c.client.CoreV1().Pods("default")
	want := []string{"a"}
	for i := range history + 5 {
		name := fmt.Sprintf("c%02d", i)
		if _, err := pods2.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	zero := int64(0)
	if err := pods2.Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	g.release()
	waitInformer(t, pods, want, map[string]string{"a": "2"})
	if reqs := g.requests(); len(reqs) < 2 || !strings.HasPrefix(reqs[0], "resume") || !slices.ContainsFunc(reqs[1:], isList) {
		t.Fatalf("a watch from a compacted revision should get 410 and make the informer relist; requests: %q", reqs)
	}

	// And it keeps following changes.
	if _, err := pods2.Create(ctx, testPod("d"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitInformer(t, pods, append(want, "d"), nil)
}

func isList(req string) bool { return strings.HasPrefix(req, "list") }

// waitInformer waits until the informer holds exactly the named pods, with the given "gen"
// labels.
func waitInformer(t *testing.T, inf cache.SharedIndexInformer, names []string, gens map[string]string) {
	t.Helper()
	want := slices.Sorted(slices.Values(names))
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got = got[:0]
		labelsOK := true
		for _, obj := range inf.GetStore().List() {
			p := obj.(*corev1.Pod)
			got = append(got, p.Name)
			if gen, ok := gens[p.Name]; ok && p.Labels["gen"] != gen {
				labelsOK = false
			}
		}
		slices.Sort(got)
		if labelsOK && slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("informer holds pods %v, want %v (labels %v)", got, want, gens)
}

// 1000 concurrent watches each receive every event, in order.
func TestThousandWatchesReceiveEveryEvent(t *testing.T) {
	const watchers, objects = 1000, 25
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cms := c.client.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var streams []watch.Interface
	for range watchers {
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("watch %d: %v", len(streams), err)
		}
		streams = append(streams, w)
	}
	defer func() {
		for _, w := range streams {
			w.Stop()
		}
	}()

	// Each object is created then updated: 2*objects events, whose order the writes fix.
	var want []string
	for i := range objects {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i)}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, "ADDED "+cm.Name+" "+cm.ResourceVersion)
		cm.Data["v"] = "2"
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "MODIFIED "+cm.Name+" "+cm.ResourceVersion)
	}

	errs := make(chan error, watchers)
	var wg sync.WaitGroup
	for _, w := range streams {
		wg.Go(func() { errs <- expectEvents(ctx, w, want) })
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed < 3 {
				t.Error(err)
			}
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d watches did not receive every event in order", failed, watchers)
	}
}

func expectEvents(ctx context.Context, w watch.Interface, want []string) error {
	for i := 0; i < len(want); i++ {
		wantEv := want[i]
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("watch closed after %d of %d events", i, len(want))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				return fmt.Errorf("event %d: %s %T, want %s", i, ev.Type, ev.Object, wantEv)
			}
			if cm.Name == "kube-root-ca.crt" { // the root-ca-cert-publisher's, written meanwhile
				i--
				continue
			}
			if got := string(ev.Type) + " " + cm.Name + " " + cm.ResourceVersion; got != wantEv {
				return fmt.Errorf("event %d: %s, want %s", i, got, wantEv)
			}
		case <-ctx.Done():
			return fmt.Errorf("got %d of %d events before the deadline", i, len(want))
		}
	}
	return nil
}
