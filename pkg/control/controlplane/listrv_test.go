package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// LIST honours resourceVersion and resourceVersionMatch as kube-apiserver does, on both
// engines: pages of a paginated list are one snapshot, Exact lists the past, bad options are
// refused with Kubernetes' codes, and a resourceVersion the store has not reached is a 504
// "Too large resource version".
func TestListResourceVersions(t *testing.T) {
	t.Run("Bolt", func(t *testing.T) { testListResourceVersions(t, startCluster(t)) })
	t.Run("Etcd", func(t *testing.T) {
		etcd := etcdtest.ForTest(t)
		testListResourceVersions(t, startClusterWith(t, func(o *Options) { o.Store = "etcd://" + strings.Join(etcd.HostPorts, ",") }))
	})
}

func testListResourceVersions(t *testing.T, c *cluster) {
	ctx := context.Background()
	cms := c.client.CoreV1().ConfigMaps("default")
	const selector = "test=listrv"
	create := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "listrv"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	names := func(l *corev1.ConfigMapList) []string {
		var out []string
		for _, cm := range l.Items {
			out = append(out, cm.Name)
		}
		return out
	}
	for _, n := range []string{"a", "b", "c"} {
		create(n)
	}

	// Pagination: every page is served at the first page's revision.
	first, err := cms.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := first.ResourceVersion
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("d")
	got := names(first)
	for next := first.Continue; next != ""; {
		page, err := cms.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1, Continue: next})
		if err != nil {
			t.Fatalf("page after %v: %v", got, err)
		}
		if page.ResourceVersion != snapshot {
			t.Errorf("page resourceVersion %s, want the first page's %s", page.ResourceVersion, snapshot)
		}
		got = append(got, names(page)...)
		if next = page.Continue; len(got) > 10 {
			t.Fatalf("pages do not end: %v", got)
		}
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("paginated list across a delete and a create: %v, want [a b c] (the first page's snapshot)", got)
	}

	// Exact lists the past, NotOlderThan the present.
	exact, err := cms.List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: snapshot, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(exact), []string{"a", "b", "c"}) || exact.ResourceVersion != snapshot {
		t.Errorf("Exact at %s: %v at %s, want [a b c] at %s", snapshot, names(exact), exact.ResourceVersion, snapshot)
	}
	now, err := cms.List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: snapshot, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(now), []string{"a", "b", "d"}) {
		t.Errorf("NotOlderThan %s: %v, want [a b d]", snapshot, names(now))
	}
	// kubectl pages with --chunk-size and shows the present.
	out := c.mustKubectl(t, "", "get", "configmaps", "-l", selector, "--chunk-size=1", "-o", "name")
	if !slices.Equal(strings.Fields(out), []string{"configmap/a", "configmap/b", "configmap/d"}) {
		t.Errorf("kubectl get --chunk-size=1: %q", out)
	}

	// Bad options: Kubernetes' codes and reasons.
	hc := c.httpClient(t)
	get := func(query string) (int, metav1.Status, time.Duration) {
		t.Helper()
		start := time.Now()
		resp, err := hc.Get(c.url + "/api/v1/namespaces/default/configmaps?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st, time.Since(start)
	}
	for query, want := range map[string]metav1.StatusReason{
		"resourceVersion=abc":                                                          metav1.StatusReasonBadRequest,
		"resourceVersion=1&resourceVersionMatch=Bogus":                                 metav1.StatusReasonInvalid,
		"resourceVersionMatch=Exact":                                                   metav1.StatusReasonInvalid,
		"resourceVersion=0&resourceVersionMatch=Exact":                                 metav1.StatusReasonInvalid,
		"continue=" + first.Continue + "&resourceVersion=1":                            metav1.StatusReasonBadRequest,
		"continue=bm90IGEgdG9rZW4":                                                     metav1.StatusReasonBadRequest,
		"continue=" + first.Continue + "&resourceVersionMatch=Exact&resourceVersion=1": metav1.StatusReasonInvalid,
	} {
		code, st, _ := get(query)
		if st.Reason != want || int(st.Code) != code || (want == metav1.StatusReasonInvalid) != (code == http.StatusUnprocessableEntity) {
			t.Errorf("?%s: %d %s %q, want reason %s", query, code, st.Reason, st.Message, want)
		}
	}

	// A resourceVersion the store has not reached: the server waits for it (about 3s), then
	// answers 504 Too large resource version.
	future := strconv.FormatUint(mustUint(t, now.ResourceVersion)+1000, 10)
	for _, query := range []string{"resourceVersion=" + future + "&resourceVersionMatch=NotOlderThan", "resourceVersion=" + future + "&resourceVersionMatch=Exact",
		"resourceVersion=18446744073709551615&resourceVersionMatch=NotOlderThan"} {
		code, st, took := get(query)
		if code != http.StatusGatewayTimeout || !storage.IsTooLargeResourceVersion(apierrors.FromObject(&st)) || st.Details.RetryAfterSeconds != 1 {
			t.Errorf("?%s: %d %+v, want 504 Too large resource version with retryAfterSeconds 1", query, code, st)
		}
		if took < 2*time.Second {
			t.Errorf("?%s answered after %s, before waiting for the store to catch up", query, took)
		}
	}
	// A watch-list (sendInitialEvents) from that revision ends with the same error as an event.
	resp, err := hc.Get(c.url + "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&resourceVersion=" + future)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	line, _ := bufio.NewReader(resp.Body).ReadBytes('\n')
	resp.Body.Close()
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type != "ERROR" || !storage.IsTooLargeResourceVersion(apierrors.FromObject(&ev.Object)) {
		t.Errorf("watch-list from a future resourceVersion: %d %s, want an ERROR event Too large resource version", resp.StatusCode, line)
	}

	// An informer (list + watch through client-go's reflector) still lists and follows.
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	create("e")
	waitFor(t, "the informer to see a, b, d and e", func() bool {
		keys := informer.GetStore().ListKeys()
		slices.Sort(keys)
		return slices.Equal(keys, []string{"default/a", "default/b", "default/d", "default/e"})
	})
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
