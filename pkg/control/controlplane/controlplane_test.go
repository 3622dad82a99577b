package controlplane

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// cluster is a miniapi running in-process on a loopback port.
type cluster struct {
	kubeconfig string
	url        string
	client     kubernetes.Interface
}

func startCluster(t *testing.T) *cluster { return startClusterWith(t, func(*Options) {}) }

// startClusterWith lets a test change the options before miniapi starts.
func startClusterWith(t *testing.T, change func(*Options)) *cluster {
	t.Helper()
	return newRestartable(t, change).start()
}

// restartable is a miniapi that a test stops and starts again on the same data dir and
// port, as a restart of the daemon would.
type restartable struct {
	t    *testing.T
	o    Options
	stop func()
}

func newRestartable(t *testing.T, change func(*Options)) *restartable {
	testenv.Integration(t, "starts a whole miniapi control plane")
	o := Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", SecurePort: freeport.For(t), Store: "bolt",
		ServiceRange: "10.96.0.0/12", Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	change(&o)
	m := &restartable{t: t, o: o}
	t.Cleanup(func() {
		if m.stop != nil {
			m.stop()
		}
	})
	return m
}

// start runs miniapi and waits until it answers.
func (m *restartable) start() *cluster {
	m.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, m.o) }()
	m.stop = func() {
		cancel()
		if err := <-done; err != nil {
			m.t.Errorf("miniapi stopped with error: %v", err)
		}
		m.stop = nil
	}
	c := &cluster{kubeconfig: AdminKubeconfig(m.o.DataDir), url: m.o.ServerURL()}
	deadline := time.Now().Add(20 * time.Second)
	for {
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err == nil {
			c.client, err = kubernetes.NewForConfig(cfg)
		}
		if err == nil {
			_, err = c.client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		}
		if err == nil { // ready: the authorization caches are filled and the bootstrap policy is in
			_, err = c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		}
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("miniapi did not come up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	testenv.RequireTools(t, "kubectl")
	return c.kubectlAt(t, "kubectl", stdin, args...)
}

// kubectlAt runs one kubectl binary against the cluster with its own cache directory, so
// that nothing cached by another test or version is reused.
func (c *cluster) kubectlAt(t *testing.T, bin, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--kubeconfig", c.kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cluster) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := c.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

func readyNode(name string, pods int64) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("2")},
			Capacity:    corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.32.0-minik8s"},
		},
	}
}

func (c *cluster) createReadyNode(t *testing.T, name string, pods int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.client.CoreV1().Nodes().Create(ctx, readyNode(name, pods), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Status is cleared on create for kinds with a status subresource? Nodes keep it in
	// Kubernetes; write it through /status as minilet does, to exercise that path. The node
	// IPAM controller writes the new node's podCIDR meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status = readyNode(name, pods).Status
		_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKubectlAndSchedulerAgainstMiniapi(t *testing.T) {
	c := startCluster(t)
	c.createReadyNode(t, "node-a", 110)

	out := c.mustKubectl(t, "", "get", "namespaces")
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if !strings.Contains(out, ns) {
			t.Errorf("kubectl get namespaces lacks %s:\n%s", ns, out)
		}
	}
	out = c.mustKubectl(t, "", "get", "nodes")
	if !strings.Contains(out, "STATUS") || !regexpLine(out, `node-a\s+Ready\s+<none>`) {
		t.Errorf("kubectl get nodes should show node-a Ready:\n%s", out)
	}

	pod := `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: localhost/minik8s/netexec:v1
`
	c.mustKubectl(t, pod, "apply", "-f", "-")
	waitFor(t, "pod bound by the scheduler", func() bool {
		p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-a"
	})
	p, _ := c.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if p.Spec.RestartPolicy != corev1.RestartPolicyAlways || p.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pod not defaulted: restartPolicy=%q pullPolicy=%q", p.Spec.RestartPolicy, p.Spec.Containers[0].ImagePullPolicy)
	}
	if p.Status.Phase != corev1.PodPending || p.UID == "" || p.CreationTimestamp.IsZero() {
		t.Errorf("pod metadata/status not set on create: %+v", p.ObjectMeta)
	}

	out = c.mustKubectl(t, "", "get", "pods", "-o", "wide", "-A")
	if !regexpLine(out, `default\s+web\s+0/1\s+Pending\s+0\s+\S+\s+<none>\s+node-a`) {
		t.Errorf("kubectl get pods -o wide:\n%s", out)
	}
	out = c.mustKubectl(t, "", "get", "pod", "web", "-o", "jsonpath={.spec.nodeName}")
	if out != "node-a" {
		t.Errorf("jsonpath nodeName = %q", out)
	}
	c.mustKubectl(t, "", "label", "pod", "web", "tier=front")
	out = c.mustKubectl(t, "", "get", "pods", "-l", "tier=front", "-o", "name")
	if strings.TrimSpace(out) != "pod/web" {
		t.Errorf("label selector: %q", out)
	}
	out = c.mustKubectl(t, "", "get", "pods", "--field-selector", "spec.nodeName=node-b", "-o", "name")
	if strings.TrimSpace(out) != "" {
		t.Errorf("field selector should match nothing: %q", out)
	}

	// Bound pods are deleted gracefully: marked, then removed by the node's final delete.
	if err := c.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("pod should be terminating with 30s grace: %v %+v", err, p)
	}
	zero := int64(0)
	if err := c.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod should be gone after a zero-grace delete: %v", err)
	}
}

func TestConflictsAndBadInput(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "1"}}
	created, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: want AlreadyExists, got %v", err)
	}
	update := created.DeepCopy()
	update.Data["a"] = "2"
	if _, err := c.client.CoreV1().ConfigMaps("default").Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := created.DeepCopy()
	stale.Data["a"] = "3"
	if _, err := c.client.CoreV1().ConfigMaps("default").Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: want Conflict, got %v", err)
	}
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}
	_, err = c.client.CoreV1().ConfigMaps("default").Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name") {
		t.Errorf("invalid name: want 422 naming metadata.name, got %v", err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("nope").Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in missing namespace: want NotFound, got %v", err)
	}

	out, err := c.kubectl(t, "{not json", "create", "--validate=false", "-f", "-")
	if err == nil {
		t.Errorf("kubectl create of malformed input should fail: %s", out)
	}
	hc := c.httpClient(t)
	resp, err := hc.Post(c.url+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(`{"metadata": {"name": "x"`))
	if err != nil {
		t.Fatal(err)
	}
	var st metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || st.Kind != "Status" {
		t.Errorf("malformed JSON: want 400 Status, got %d %+v", resp.StatusCode, st)
	}
	big := `{"metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("a", 4<<20) + `"}}`
	resp, err = hc.Post(c.url+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: want 413, got %d", resp.StatusCode)
	}
}

func TestAuthentication(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte("s3cret,alice,1001,\"dev,ops\"\nadm1n,root,1002,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, func(o *Options) { o.TokenFile = tokenFile })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, c.url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200}, {"/version", "", 200}, {"/readyz", "", 200},
		{"/api/v1/pods", "", 401}, {"/api", "", 401},
		// alice is authenticated (discovery is hers) but no role lets her list pods.
		{"/api", "s3cret", 200}, {"/api/v1/pods", "s3cret", 403},
		{"/api/v1/pods", "adm1n", 200}, {"/api/v1/pods", "wrong", 401}, {"/healthz", "wrong", 401},
	} {
		if got := get(tc.path, tc.token); got != tc.want {
			t.Errorf("GET %s with token %q = %d, want %d", tc.path, tc.token, got, tc.want)
		}
	}
	// kubectl with only a token (an empty kubeconfig, so no client certificate is sent).
	empty := filepath.Join(t.TempDir(), "empty.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("kubectl", "--kubeconfig", empty, "--server", c.url, "--insecure-skip-tls-verify", "--token", "adm1n", "get", "ns", "default").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "default") {
		t.Errorf("kubectl with a bearer token: %v\n%s", err, out)
	}
}

// TestHealthChecks: /healthz, /livez and /readyz answer as kube-apiserver's: named checks,
// listed with ?verbose, one at a time under their path, ?exclude= leaving one out, and
// /readyz holding for the bootstrap RBAC policy.
func TestHealthChecks(t *testing.T) {
	c := startCluster(t)
	get := func(path string) (string, error) {
		p, query, _ := strings.Cut(path, "?")
		req := c.client.Discovery().RESTClient().Get().AbsPath(p)
		params, _ := url.ParseQuery(query)
		for k, vs := range params {
			for _, v := range vs {
				req = req.Param(k, v)
			}
		}
		out, err := req.DoRaw(t.Context())
		return string(out), err
	}
	for _, tc := range []struct{ path, want string }{
		{"/readyz?verbose", "[+]ping ok\n[+]etcd ok\n[+]poststarthook/rbac/bootstrap-roles ok\nreadyz check passed"},
		{"/livez?verbose", "[+]ping ok\n[+]etcd ok\nlivez check passed"},
		{"/healthz?verbose", "[+]ping ok\n[+]etcd ok\nhealthz check passed"},
		{"/readyz?verbose&exclude=etcd", "[+]ping ok\n[+]etcd excluded: ok\n[+]poststarthook/rbac/bootstrap-roles ok\nreadyz check passed"},
		{"/readyz/etcd", "ok"},
		{"/readyz/poststarthook/rbac/bootstrap-roles", "ok"},
		{"/livez", "ok"},
	} {
		got, err := get(tc.path)
		if err != nil || strings.TrimSpace(got) != tc.want {
			t.Errorf("GET %s = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if _, err := get("/readyz/no-such-check"); !apierrors.IsNotFound(err) {
		t.Errorf("GET /readyz/no-such-check: want 404, got %v", err)
	}
}

func TestInformerSeesChangesInOrder(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			// Not the root-ca-cert-publisher's kube-root-ca.crt, written meanwhile.
			o.FieldSelector = fields.AndSelectors(fields.OneTermEqualSelector("metadata.namespace", "default"),
				fields.OneTermNotEqualSelector("metadata.name", "kube-root-ca.crt")).String()
		}))
	inf := factory.Core().V1().ConfigMaps().Informer()
	seen := make(chan string, 100)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seen <- "add " + o.(*corev1.ConfigMap).Name },
		UpdateFunc: func(_, o any) { seen <- "update " + o.(*corev1.ConfigMap).Data["v"] },
		DeleteFunc: func(o any) { seen <- "delete" },
	})
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	cm, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		cm.Data["v"] = fmt.Sprint(i)
		if cm, err = c.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.client.CoreV1().ConfigMaps("default").Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add w", "update 1", "update 2", "update 3", "delete"}
	for _, w := range want {
		select {
		case got := <-seen:
			if got != w {
				t.Fatalf("informer event %q, want %q", got, w)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("informer: no event, want %q", w)
		}
	}
}

// adminConfig is the admin's client config, for the clients a test builds itself.
// raw sends a request as the admin, a JSON body unless empty, and returns the answer's
// status code and body.
func (c *cluster) raw(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	client, err := rest.HTTPClientFor(c.adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func (c *cluster) adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (c *cluster) httpClient(t *testing.T) *http.Client {
	cfg := c.adminConfig(t)
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
}

// getAccept GETs path from the API server with hc, asking for accept; it returns the
// response, its body read and closed, and the body.
func (c *cluster) getAccept(t *testing.T, hc *http.Client, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// waitFor polls cond for up to 30 s: generous, as CI runs packages side by side on 2 cores.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	controllertest.Until(t, what, 30*time.Second, cond)
}

// eventually runs kubectl until it succeeds (discovery catching up, an informer filling)
// and returns its output.
func eventually(t *testing.T, c *cluster, args ...string) string {
	t.Helper()
	var out string
	waitFor(t, "kubectl "+strings.Join(args, " "), func() bool {
		var err error
		out, err = c.kubectl(t, "", args...)
		return err == nil
	})
	return out
}

// waitFor runs kubectl until its output is want.
func (c *cluster) waitFor(t *testing.T, want string, args ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("kubectl %s to print %q", strings.Join(args, " "), want), func() bool {
		out, _ := c.kubectl(t, "", args...)
		return out == want
	})
}

// regexpLine tells whether some line of out matches pattern.
func regexpLine(out, pattern string) bool {
	return regexp.MustCompile(`(?m)` + pattern).MatchString(out)
}

// A data dir that served a cluster (its admin kubeconfig is there) but whose state.db is
// empty or gone is refused, naming the file and the way back: starting would silently
// make a new, empty cluster under the old CA and credentials.
func TestEmptyStoreOfUsedDataDir(t *testing.T) {
	m := newRestartable(t, func(*Options) {})
	m.start()
	m.stop()
	path := filepath.Join(m.o.DataDir, "state.db")
	for _, c := range []struct {
		name   string
		damage func() error
	}{
		{"Emptied", func() error { return os.Truncate(path, 0) }},
		{"Removed", func() error { return os.Remove(path) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.damage(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			err := Run(ctx, m.o)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "backup") || !strings.Contains(err.Error(), AdminKubeconfig(m.o.DataDir)) {
				t.Fatalf("start on an empty store in a used data dir: %v, want an error naming %s, the kubeconfig and the recovery", err, path)
			}
			if fi, err := os.Stat(path); err == nil && fi.Size() != 0 {
				t.Fatalf("the refused start wrote %d bytes into %s", fi.Size(), path)
			}
		})
	}
}
