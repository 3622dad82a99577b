// Package metricsapi is miniapi's own metrics.k8s.io/v1beta1 (NodeMetrics, PodMetrics),
// what metrics-server serves behind kube-apiserver's aggregator: it asks each node's API
// (pkg/nodeapi) for its CPU and memory summary with miniapi's kubelet-client certificate and
// keeps the answers briefly, so `kubectl top` works with nothing to install.
package metricsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/nodeaddr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// GroupVersion is the API served.
var GroupVersion = metricsv1beta1.SchemeGroupVersion

// Resources are its discovery entries, as metrics-server registers them.
var Resources = []metav1.APIResource{
	{Name: "nodes", Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
	{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}},
}

const (
	// cacheTTL is how long a node's summary is reused: metrics-server's resolution.
	cacheTTL = 15 * time.Second
	// scrapeTimeout bounds one node's answer (metrics-server's default is 10 s).
	scrapeTimeout = 5 * time.Second
	// window is the span the nodes' CPU rates are over: their housekeeping interval
	// (pkg/stats).
	window = 10 * time.Second
)

// API serves metrics.k8s.io.
type API struct {
	client    kubernetes.Interface
	transport http.RoundTripper
	// addressTypes pick the node address to reach (--kubelet-preferred-address-types).
	addressTypes []corev1.NodeAddressType
	log          *slog.Logger

	mu    sync.Mutex
	nodes map[string]*scrape
}

// scrape is one node's last summary, or the fetch of it under way (done open).
type scrape struct {
	done    chan struct{}
	at      time.Time
	summary *statsapi.Summary
	err     error
}

// New reads nodes and pods through client and reaches the nodes with transport at their
// address of the first of addressTypes (none: nodeaddr.DefaultAPITypes) they have, as the
// node proxy does.
func New(client kubernetes.Interface, transport http.RoundTripper, addressTypes []corev1.NodeAddressType, log *slog.Logger) *API {
	return &API{client: client, transport: transport, addressTypes: addressTypes, log: log, nodes: map[string]*scrape{}}
}

// ServeHTTP answers GET (list, get) under /apis/metrics.k8s.io/v1beta1/.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/apis/" + GroupVersion.String() + "/"
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, prefix), "/"), "/")
	if r.Method != http.MethodGet {
		writeError(w, apierrors.NewMethodNotSupported(GroupVersion.WithResource(parts[0]).GroupResource(), strings.ToLower(r.Method)))
		return
	}
	selector := r.URL.Query().Get("labelSelector")
	ctx := r.Context()
	switch {
	case len(parts) == 1 && parts[0] == "nodes":
		a.serveNodes(ctx, w, "", selector)
	case len(parts) == 2 && parts[0] == "nodes":
		a.serveNodes(ctx, w, parts[1], "")
	case len(parts) == 1 && parts[0] == "pods":
		a.servePods(ctx, w, metav1.NamespaceAll, "", selector)
	case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "pods":
		a.servePods(ctx, w, parts[1], "", selector)
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "pods":
		a.servePods(ctx, w, parts[1], parts[3], "")
	default:
		writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: GroupVersion.Group}, r.URL.Path))
	}
}

func (a *API) serveNodes(ctx context.Context, w http.ResponseWriter, name, selector string) {
	var nodes []corev1.Node
	if name != "" {
		node, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			writeError(w, err)
			return
		}
		nodes = []corev1.Node{*node}
	} else {
		list, err := a.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			writeError(w, err)
			return
		}
		nodes = list.Items
	}
	summaries := a.summaries(ctx, nodes)
	out := metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: GroupVersion.String()}, Items: []metricsv1beta1.NodeMetrics{}}
	for _, node := range nodes {
		s := summaries[node.Name]
		if s == nil || s.Node.CPU == nil || s.Node.CPU.UsageNanoCores == nil || s.Node.Memory == nil || s.Node.Memory.WorkingSetBytes == nil {
			continue // not (yet) measured, as metrics-server leaves it out
		}
		out.Items = append(out.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: metav1.Now()},
			Timestamp:  s.Node.CPU.Time, Window: metav1.Duration{Duration: window},
			Usage: usage(s.Node.CPU, s.Node.Memory),
		})
	}
	writeOneOrAll(w, name, name, "nodemetrics", "NodeMetrics", out.Items, out)
}

func (a *API) servePods(ctx context.Context, w http.ResponseWriter, namespace, name, selector string) {
	var pods []corev1.Pod
	if name != "" {
		pod, err := a.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			writeError(w, err)
			return
		}
		pods = []corev1.Pod{*pod}
	} else {
		list, err := a.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			writeError(w, err)
			return
		}
		pods = list.Items
	}
	// Only the nodes the pods run on are asked.
	nodeSet := map[string]bool{}
	var nodes []corev1.Node
	for _, p := range pods {
		if p.Spec.NodeName != "" && !nodeSet[p.Spec.NodeName] {
			nodeSet[p.Spec.NodeName] = true
			node, err := a.client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err == nil {
				nodes = append(nodes, *node)
			}
		}
	}
	byUID := map[string]statsapi.PodStats{}
	for _, s := range a.summaries(ctx, nodes) {
		for _, ps := range s.Pods {
			byUID[ps.PodRef.UID] = ps
		}
	}
	out := metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: GroupVersion.String()}, Items: []metricsv1beta1.PodMetrics{}}
	for _, p := range pods {
		ps, ok := byUID[string(p.UID)]
		if !ok || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if m, ok := podMetrics(&p, ps); ok {
			out.Items = append(out.Items, m)
		}
	}
	writeOneOrAll(w, name, namespace+"/"+name, "podmetrics", "PodMetrics", out.Items, out)
}

// podMetrics are a pod's figures; ok is false while any of its containers has none (a
// partial pod would under-report, metrics-server drops it too).
func podMetrics(p *corev1.Pod, ps statsapi.PodStats) (metricsv1beta1.PodMetrics, bool) {
	m := metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.Now()},
		Window:     metav1.Duration{Duration: window}, Containers: []metricsv1beta1.ContainerMetrics{},
	}
	for _, c := range ps.Containers {
		if c.CPU == nil || c.CPU.UsageNanoCores == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil {
			return m, false
		}
		if c.CPU.Time.After(m.Timestamp.Time) {
			m.Timestamp = c.CPU.Time
		}
		m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: usage(c.CPU, c.Memory)})
	}
	return m, len(m.Containers) > 0
}

func usage(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(int64(*cpu.UsageNanoCores), resource.Nano),
		corev1.ResourceMemory: *resource.NewQuantity(int64(*mem.WorkingSetBytes), resource.BinarySI),
	}
}

// summaries are the nodes' CPU and memory summaries, fetched at once from the nodes not
// asked within cacheTTL; nodes that do not answer are missing.
func (a *API) summaries(ctx context.Context, nodes []corev1.Node) map[string]*statsapi.Summary {
	var wg sync.WaitGroup
	var mu sync.Mutex
	out := map[string]*statsapi.Summary{}
	for i := range nodes {
		node := &nodes[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s, err := a.summary(ctx, node); err == nil {
				mu.Lock()
				out[node.Name] = s
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// summary is the node's cached summary, fetched when older than cacheTTL; concurrent
// requests share one fetch.
func (a *API) summary(ctx context.Context, node *corev1.Node) (*statsapi.Summary, error) {
	a.mu.Lock()
	sc := a.nodes[node.Name]
	if sc != nil {
		select {
		case <-sc.done:
			if time.Since(sc.at) >= cacheTTL {
				sc = nil
			}
		default: // under way
		}
	}
	if sc == nil {
		sc = &scrape{done: make(chan struct{})}
		a.nodes[node.Name] = sc
		go func() {
			fctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			sc.summary, sc.err = a.fetch(fctx, node)
			sc.at = time.Now()
			if sc.err != nil {
				a.log.Warn("metrics: node did not answer", "node", node.Name, "err", sc.err)
			}
			close(sc.done)
		}()
	}
	a.mu.Unlock()
	select {
	case <-sc.done:
		return sc.summary, sc.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch asks the node's API for /stats/summary?only_cpu_and_memory=true.
func (a *API) fetch(ctx context.Context, node *corev1.Node) (*statsapi.Summary, error) {
	host, err := nodeaddr.APIHostPort(node, a.addressTypes)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	u := url.URL{Scheme: "https", Host: host, Path: "/stats/summary", RawQuery: "only_cpu_and_memory=true"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: a.transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", u.String(), resp.Status)
	}
	var s statsapi.Summary
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", u.String(), err)
	}
	return &s, nil
}

// writeOneOrAll answers a get of name with its item, a 404 while it has no figures (as
// metrics-server: its resource podmetrics or nodemetrics, the item as notFound names it,
// namespace/name for a pod), and a list (name empty) with list.
func writeOneOrAll[T any, PT interface {
	*T
	runtime.Object
}](w http.ResponseWriter, name, notFound, resource, kind string, items []T, list any) {
	if name == "" {
		writeJSON(w, list)
		return
	}
	if len(items) == 0 {
		writeError(w, apierrors.NewNotFound(GroupVersion.WithResource(resource).GroupResource(), notFound))
		return
	}
	item := items[0]
	PT(&item).GetObjectKind().SetGroupVersionKind(GroupVersion.WithKind(kind))
	writeJSON(w, item)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
