// Package controlplanetest starts a real miniapi in-process on a loopback port for the tests
// of packages that are its clients (controllers, proxies): the same server, store and
// in-process components a user runs, nothing faked.
package controlplanetest

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

// Start runs miniapi on a fresh bolt store until the test ends; change, if not nil, edits
// the options first (e.g. Controllers).
func Start(t testing.TB, change func(*controlplane.Options)) *Cluster {
	t.Helper()
	o := controlplane.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", SecurePort: FreePort(t), Store: "bolt",
		ServiceRange: clusterdefaults.ServiceCIDR, Controllers: []string{"*"},
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if change != nil {
		change(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("miniapi stopped with error: %v", err)
		}
	})
	c := &Cluster{Kubeconfig: controlplane.AdminKubeconfig(o.DataDir), URL: o.ServerURL(), Options: o}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		select {
		case err = <-done:
			t.Fatalf("miniapi stopped before answering: %v", err)
		default:
		}
		c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err == nil {
			c.Config.QPS, c.Config.Burst = 500, 1000
			c.Client, err = kubernetes.NewForConfig(c.Config)
		}
		if err == nil {
			_, err = c.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		}
		if err == nil { // ready: the authorization caches are filled and the bootstrap policy is in
			_, err = c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		}
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("miniapi did not come up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FreePort is a loopback TCP port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Kubectl runs the real kubectl against the cluster with a cache directory of its own.
func (c *Cluster) Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	testenv.RequireTools(t, "kubectl")
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
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
