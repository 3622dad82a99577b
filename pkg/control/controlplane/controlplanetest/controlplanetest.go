// Package controlplanetest starts a real miniapi in-process on a loopback port for the tests
// of packages that are its clients (controllers, proxies): the same server, store and
// in-process components a user runs, nothing faked.
package controlplanetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// Cluster is a running miniapi.
type Cluster struct {
	Kubeconfig string
	URL        string
	Config     *rest.Config
	Client     kubernetes.Interface
	Options    controlplane.Options
	// Namespace is the test's own namespace on a Shared cluster ("" on one of Start's):
	// Kubectl works in it.
	Namespace string
}

// readyWithin is how long a new miniapi may take to answer ready, stretched by
// testenv.Timeout: it takes a few CPU seconds under -race, which at load 40 on two cores
// took over a minute.
const readyWithin = 2 * time.Minute

// Start runs miniapi on a fresh bolt store until the test ends; change, if not nil, edits
// the options first (e.g. Controllers). A test that needs no options of its own and can
// work in a namespace of its own takes Shared instead.
func Start(t testing.TB, change func(*controlplane.Options)) *Cluster {
	t.Helper()
	dir := t.TempDir()
	c, stop, err := launch(dir, change)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("miniapi stopped with error: %v", err)
		}
	})
	// Ready is the API's readiness; the serviceaccount controller makes the default
	// namespace's account a moment later, and until then pods there are refused (as on a
	// kube-apiserver just started). Tests create pods there at once.
	if controllers := c.Options.Controllers; slices.Contains(controllers, "serviceaccount") ||
		slices.Contains(controllers, "*") && !slices.Contains(controllers, "-serviceaccount") {
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("no default ServiceAccount in the default namespace after a minute: %v", err)
		}
	}
	return c
}

// launch runs miniapi with its data in dir until stop is called; it returns once miniapi
// answers ready.
func launch(dir string, change func(*controlplane.Options)) (c *Cluster, stop func() error, err error) {
	port, err := freeport.One()
	if err != nil {
		return nil, nil, err
	}
	o := controlplane.Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: port, Store: "bolt",
		ServiceRange: clusterdefaults.ServiceCIDR, Controllers: []string{"*"},
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if change != nil {
		change(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, o) }()
	stop = func() error {
		cancel()
		return <-done
	}
	c = &Cluster{Kubeconfig: controlplane.AdminKubeconfig(o.DataDir), URL: o.ServerURL(), Options: o}
	within := testenv.Timeout(readyWithin)
	deadline := time.Now().Add(within)
	for {
		select {
		case err = <-done:
			cancel()
			return nil, nil, fmt.Errorf("miniapi stopped before answering: %v", err)
		default:
		}
		if err = c.connect(ctx); err == nil {
			return c, stop, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.Join(fmt.Errorf("miniapi did not come up within %v (%s scales it): %v", within, testenv.TimeoutScaleEnv, err), stop())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connect builds c's client and asks miniapi whether it is ready: the authorization caches
// filled and the bootstrap policy in.
func (c *Cluster) connect(ctx context.Context) error {
	var err error
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	c.Config.QPS, c.Config.Burst = 500, 1000
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	if _, err = c.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return err
	}
	_, err = c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

// Kubectl runs the real kubectl against the cluster with a cache directory of its own.
func (c *Cluster) Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	testenv.RequireTools(t, "kubectl")
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir()}
	if c.Namespace != "" {
		flags = append(flags, "--namespace", c.Namespace)
	}
	cmd := exec.Command(bin, append(flags, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// MustKubectl is Kubectl that fails the test on a non-zero exit.
func (c *Cluster) MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

// CreateReadyNode registers a Node that reports Ready with room for pods, as a minilet
// would (status written through /status), without running anything.
func (c *Cluster) CreateReadyNode(t testing.TB, name string, pods int64, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	status := corev1.NodeStatus{
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()}},
		Allocatable: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Capacity:    corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.32.0-minik8s"},
	}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node IPAM controller writes a new node's podCIDR meanwhile: retry on conflict.
	var n *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = status
		n, err = c.Client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// KeepNodeReady renews node's Lease every 300 ms until the test ends, as a minilet does, so
// the node lifecycle controller sees it alive: a test silencing another node needs one, as
// with no node Ready the controller takes every node's NoExecute taints away (kube's master
// disruption mode).
func (c *Cluster) KeepNodeReady(t testing.TB, node string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	lease, err := c.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if next, err := c.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, lease, metav1.UpdateOptions{}); err == nil {
				lease = next
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
}

// CreateNamespace creates a namespace and waits until the serviceaccount controller (which
// must be running) has made its "default" account. Admission refuses a pod whose account is
// missing, and on a loaded machine the controller can take longer than admission's own
// short wait for it, as the e2e framework also knows.
func (c *Cluster) CreateNamespace(t testing.TB, ns *corev1.Namespace) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount after a minute: %v", ns.Name, err)
	}
}
