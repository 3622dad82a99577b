package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/images"
	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/hostnetwork"
	"github.com/minik8s/minik8s/pkg/agent/imagegc"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/cniconf"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	"github.com/minik8s/minik8s/pkg/runtime/runtimetest"
)

const cniBinDir = "/usr/lib/cni"

// nodeNetwork runs CNI inside the test's node namespace, so the bridge,
// veths and rules land there and never in the host's namespace.
type nodeNetwork struct {
	*network.CNI
	nodeNS string
}

func (nodeNetwork) NewNetNS(dir, name string) (string, error) { return network.NewNetNS(dir, name) }
func (nodeNetwork) RemoveNetNS(path string) error             { return network.RemoveNetNS(path) }

func (n nodeNetwork) SetUp(ctx context.Context, id, netnsPath string, pod network.PodRef, opts network.PodOptions) (ip net.IP, err error) {
	err = network.InNetNS(n.nodeNS, func() error {
		ip, err = n.CNI.SetUp(ctx, id, netnsPath, pod, opts)
		return err
	})
	return ip, err
}

func (n nodeNetwork) Check(ctx context.Context, id, netnsPath string, pod network.PodRef) error {
	return network.InNetNS(n.nodeNS, func() error { return n.CNI.Check(ctx, id, netnsPath, pod) })
}

// BindNodeNetNS binds the test's node namespace, as a minilet running in it would.
func (n nodeNetwork) BindNodeNetNS(dir, name string) (path string, isHost bool, err error) {
	err = network.InNetNS(n.nodeNS, func() error {
		path, isHost, err = network.BindCurrentNetNS(dir, name)
		return err
	})
	return path, isHost, err
}

func (n nodeNetwork) TearDown(ctx context.Context, id, netnsPath string, pod network.PodRef) error {
	return network.InNetNS(n.nodeNS, func() error { return n.CNI.TearDown(ctx, id, netnsPath, pod) })
}

// TestIntegrationPodOnContainerdAndCNI runs one pod through the real runtime
// (a private containerd) and the real CNI plugins, in a node namespace the
// test makes, with the fake clientset feeding the pod. The node's network is the
// operator's (--cni-config=file), not written yet: the node is NotReady as the kubelet
// says it, the pod waits with a NetworkNotReady event while a hostNetwork pod runs; once
// the configuration is written the node turns Ready and the pod starts, serves HTTP on
// its pod IP, logs to its log file (with the Services' variables in its env), and is
// torn down on deletion.
func TestIntegrationPodOnContainerdAndCNI(t *testing.T) {
	testenv.RequireFile(t, filepath.Join(cniBinDir, "bridge"), "CNI plugins: Debian's containernetworking-plugins")
	address := runtimetest.StartContainerd(t) // skips when not root or containerd is missing
	imageDir := runtimetest.ImageDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	root := t.TempDir()
	nodeNS := testNodeNamespace(t, root)
	t.Cleanup(func() { unmountDir(t, filepath.Join(root, "netns")) }) // NewNetNS made it a mount point
	t.Cleanup(func() {
		if err := hostnetwork.Remove(root); err != nil {
			t.Error(err)
		}
	})

	rt, err := runtime.New(ctx, address, "minilet-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	busybox := filepath.Join(imageDir, images.Tarballs[images.BusyboxRef])
	if err := rt.EnsureImage(ctx, images.BusyboxRef, func() (io.ReadCloser, error) { return os.Open(busybox) }); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		NodeName: testNode, NodeIP: "10.200.0.11", PodCIDR: "10.244.1.0/24", RootDir: root,
		ContainerdAddress: address, ContainerdNamespace: "minilet-test", CNIBinDir: cniBinDir, CNIBridge: "cni0",
		CgroupRoot: testenv.CgroupRoot(t), ContainerLogMaxSize: "10Mi", ContainerLogMaxFiles: 5,
	}
	rt.SetLogConfig(cfg.LogConfig())
	rt.SetImageVolumeDir(cfg.ImageVolumesDir())
	t.Cleanup(func() {
		if err := cm.RemoveRoot(cfg.CgroupRoot); err != nil {
			t.Errorf("remove test cgroups: %v", err)
		}
	})
	cni, err := network.NewCNI(network.Config{Source: network.ConfigFile, PluginDirs: []string{cniBinDir},
		CacheDir: cfg.CNICacheDir(), ConfDir: cfg.CNINetConfDir()})
	if err != nil {
		t.Fatal(err)
	}
	client := agenttest.NewClient()
	// The Services' variables come from minilet's Service informer.
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-svc"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}}}},
	} {
		if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	recorder := record.NewFakeRecorder(1000)
	a, err := New(cfg, Dependencies{Client: client, Recorder: recorder, Runtime: rt, Network: nodeNetwork{cni, nodeNS}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo hello from $POD_NAME via $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT and $WEB_SVC_PORT; echo ok > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitCNIConfig(ctx, t, client, recorder, cfg)
	raw, err := cniconf.Generate(cniconf.Params{BridgeName: cfg.CNIBridge, PodCIDR: cfg.PodCIDR, IPAMDataDir: cfg.CNINetworksDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cniconf.Write(cfg.CNINetConfDir(), raw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node Ready once its network is configured", func() bool {
		return nodeReady(ctx, client).Status == corev1.ConditionTrue
	})
	var podIP string
	waitFor(t, "pod Running", func() bool {
		got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		podIP = got.Status.PodIP
		return err == nil && got.Status.Phase == corev1.PodRunning
	})
	if !strings.HasPrefix(podIP, "10.244.1.") {
		t.Fatalf("pod IP %q is not in the node's pod CIDR", podIP)
	}
	if err := network.InNetNS(nodeNS, func() error { _, err := netlink.LinkByName(cfg.CNIBridge); return err }); err != nil {
		t.Errorf("bridge %s is not in the node namespace: %v", cfg.CNIBridge, err)
	}
	allocation := filepath.Join(cfg.CNINetworksDir(), network.NetworkName, podIP)
	if _, err := os.Stat(allocation); err != nil {
		t.Errorf("pod IP not recorded by host-local IPAM: %v", err)
	}

	var reply string
	waitFor(t, "HTTP answer from the pod", func() bool {
		reply, err = httpGetInNetNS(nodeNS, podIP+":8080", "/index.html")
		return err == nil && strings.Contains(reply, "ok")
	})
	testHostNetworkPod(ctx, t, client, rt, nodeNS)
	testImageVolumePod(ctx, t, client, rt, cfg)
	logFile := filepath.Join(root, "logs", "default_web_"+string(pod.UID), "app", "0.log")
	waitFor(t, "the container's log", func() bool {
		data, _ := os.ReadFile(logFile)
		return strings.Contains(string(data), "hello from web via 10.96.0.1:443 and tcp://10.96.0.20:8080")
	})

	testReclaimDisk(ctx, t, a, client, rt, root)

	deleteAndWait(ctx, t, client, rt, pod)
	if _, err := os.Stat(filepath.Join(cfg.netnsDir(), string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("pod netns left after deletion: %v", err)
	}
	if _, err := os.Stat(allocation); err == nil {
		t.Errorf("pod IP %s still allocated after deletion", podIP)
	}
}

// networkNotReady is how the kubelet reports a runtime whose pod network has no CNI
// configuration yet (containerd's CRI's condition).
const networkNotReady = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"

// awaitCNIConfig: with no CNI configuration yet, the node is NotReady saying why, and the
// pod "web" waits, ContainerCreating, with the kubelet's NetworkNotReady event.
func awaitCNIConfig(ctx context.Context, t *testing.T, client *fake.Clientset, recorder *record.FakeRecorder, cfg Config) {
	waitFor(t, "node NotReady without a CNI configuration", func() bool {
		c := nodeReady(ctx, client)
		return c.Status == corev1.ConditionFalse && c.Reason == "KubeletNotReady" && c.Message == networkNotReady
	})
	const event = "Warning NetworkNotReady network is not ready: " + networkNotReady
	var seen []string
	waitFor(t, "the pod's NetworkNotReady event", func() bool {
		for {
			select {
			case e := <-recorder.Events:
				seen = append(seen, e)
				continue
			default:
			}
			return slices.Contains(seen, event)
		}
	})
	got, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := agenttest.ContainerStatus(got, "app"); got.Status.Phase != corev1.PodPending || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("pod without a pod network: %s %+v, want Pending, ContainerCreating", got.Status.Phase, cs.State)
	}
	if entries, _ := os.ReadDir(cfg.netnsDir()); len(entries) != 0 {
		t.Errorf("network namespaces made without a pod network: %v", entries)
	}
}

// nodeReady is the test node's Ready condition (empty while it has none).
func nodeReady(ctx context.Context, client *fake.Clientset) corev1.NodeCondition {
	node, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		return corev1.NodeCondition{}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// testReclaimDisk: the disk reclaim the eviction manager runs before evicting (the
// kubelet's DeleteAllUnusedContainers) removes a finished pod's exited container and its
// log on the real runtime, keeps the pod's written status, and leaves running pods be.
func testReclaimDisk(ctx context.Context, t *testing.T, a *Agent, client *fake.Clientset, rt *runtime.Runtime, root string) {
	done := agenttest.Pod("done", corev1.RestartPolicyNever, "app")
	done.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	done.Spec.Containers[0].Command = []string{"sh", "-c", "echo bye"}
	if _, err := client.CoreV1().Pods(done.Namespace).Create(ctx, done, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod done Succeeded", func() bool {
		got, err := client.CoreV1().Pods(done.Namespace).Get(ctx, done.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodSucceeded
	})
	appContainers := func(podUID types.UID) []runtime.Container {
		all, err := rt.ListContainers(ctx, string(podUID))
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(all, func(c runtime.Container) bool { return c.Sandbox })
	}
	logFile := filepath.Join(root, "logs", "default_done_"+string(done.UID), "app", "0.log")
	if len(appContainers(done.UID)) != 1 {
		t.Fatalf("the finished pod has %d containers before the reclaim, want its one", len(appContainers(done.UID)))
	}
	if _, err := os.Stat(logFile); err != nil {
		t.Fatalf("the finished pod's log before the reclaim: %v", err)
	}
	web, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	images := imagegc.New(rt, 100, 80, clock.RealClock{}, slog.Default(), pauseimage.Ref)
	if err := a.reclaimDisk(ctx, images); err != nil {
		t.Fatal(err)
	}
	if left := appContainers(done.UID); len(left) != 0 {
		t.Errorf("the finished pod's containers after the reclaim: %+v", left)
	}
	if _, err := os.Stat(logFile); !os.IsNotExist(err) {
		t.Errorf("the finished pod's log after the reclaim: %v, want it removed", err)
	}
	if left := appContainers(web.UID); len(left) != 1 || left[0].State != runtime.StateRunning {
		t.Errorf("the running pod's containers after the reclaim: %+v", left)
	}
	got, err := client.CoreV1().Pods(done.Namespace).Get(ctx, done.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := agenttest.ContainerStatus(got, "app"); got.Status.Phase != corev1.PodSucceeded || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Errorf("the finished pod's status after the reclaim: %s %+v, want it as written", got.Status.Phase, cs.State)
	}
	deleteAndWait(ctx, t, client, rt, got)
}

// testNodeNamespace makes the namespace playing the node, with lo up.
func testNodeNamespace(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "test-node")
	path, err := network.NewNetNS(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := network.RemoveNetNS(path); err != nil {
			t.Error(err)
		}
		unmountDir(t, dir)
	})
	err = network.InNetNS(path, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func unmountDir(t *testing.T, dir string) {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		t.Errorf("unmount %s: %v", dir, err)
	}
}

// httpGetInNetNS fetches path from addr with a client inside the namespace at nsPath.
func httpGetInNetNS(nsPath, addr, path string) (string, error) {
	var reply []byte
	err := network.InNetNS(nsPath, func() error {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\n\r\n", path); err != nil {
			return err
		}
		reply, err = io.ReadAll(conn)
		return err
	})
	return string(reply), err
}

// deleteAndWait marks pod deleted with a grace of 1 s, as the API server does, waits until
// minilet has stopped it and removed it from the API, and checks it left no container.
func deleteAndWait(ctx context.Context, t *testing.T, client *fake.Clientset, rt *runtime.Runtime, pod *corev1.Pod) {
	t.Helper()
	deleting, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](1)
	if _, err := client.CoreV1().Pods(pod.Namespace).Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the final delete of "+pod.Name, func() bool {
		_, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if left, err := rt.ListContainers(ctx, string(pod.UID)); err != nil || len(left) != 0 {
		t.Errorf("containers of %s left after deletion: %+v (%v)", pod.Name, left, err)
	}
}

// testHostNetworkPod runs a hostNetwork pod serving its hostname on port 18080: it answers
// on the loopback of the node namespace (minilet's, which the test stands in for), not in
// the test's own namespace (the host's, where containerd runs), and is named after the node.
func testHostNetworkPod(ctx context.Context, t *testing.T, client *fake.Clientset, rt *runtime.Runtime, nodeNS string) {
	t.Helper()
	pod := agenttest.Pod("host", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostNetwork = true
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "hostname > /tmp/index.html; exec httpd -f -p 18080 -h /tmp"}
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var reply string
	waitFor(t, "HTTP answer from the hostNetwork pod in the node namespace", func() bool {
		var err error
		reply, err = httpGetInNetNS(nodeNS, "127.0.0.1:18080", "/index.html")
		return err == nil
	})
	if !strings.Contains(reply, "\r\n\r\n"+testNode+"\n") {
		t.Errorf("hostNetwork pod's hostname: reply %q, want %s", reply, testNode)
	}
	if listening(t, 18080) {
		t.Error("the hostNetwork pod listens in the host's namespace")
	}
	deleteAndWait(ctx, t, client, rt, pod)
	if err := network.InNetNS(nodeNS, func() error { _, err := netlink.LinkByName("cni0"); return err }); err != nil {
		t.Errorf("the node's bridge is gone after the hostNetwork pod: %v", err)
	}
}

// testImageVolumePod: a pod's image volume gives its container the image's files,
// read-only, whole or a directory of them (subPath); the pod's deletion leaves no mount
// or directory of it.
func testImageVolumePod(ctx context.Context, t *testing.T, client *fake.Clientset, rt *runtime.Runtime, cfg Config) {
	t.Helper()
	pod := agenttest.Pod("img", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostNetwork = true
	pod.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: images.BusyboxRef, PullPolicy: corev1.PullNever}}}}
	c := &pod.Spec.Containers[0]
	c.ImagePullPolicy = corev1.PullNever
	c.VolumeMounts = []corev1.VolumeMount{{Name: "img", MountPath: "/img"}, {Name: "img", MountPath: "/img-etc", SubPath: "etc"}}
	c.Command = []string{"sh", "-c", "test -x /img/bin/sh && cat /img-etc/passwd && if touch /img/x; then echo WRITABLE; fi; exec sleep 3600"}
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(cfg.logsDir(), "default_img_"+string(created.UID), "app", "0.log")
	var logs []byte
	waitFor(t, "the image volume's files in the container", func() bool {
		logs, _ = os.ReadFile(logFile)
		return strings.Contains(string(logs), "root:x:0:0") && strings.Contains(string(logs), "Read-only file system")
	})
	if strings.Contains(string(logs), "WRITABLE") {
		t.Errorf("the image volume is writable: %q", logs)
	}
	deleteAndWait(ctx, t, client, rt, pod)
	if entries, err := os.ReadDir(cfg.ImageVolumesDir()); err != nil || len(entries) != 0 {
		t.Errorf("left in %s after the pod: %v (%v)", cfg.ImageVolumesDir(), entries, err)
	}
}

// listening tells whether a TCP socket listens on port in the test process's network
// namespace (read from /proc, without touching the port).
func listening(t *testing.T, port int) bool {
	t.Helper()
	for _, file := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line) // sl local_address rem_address st ...
			if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1], fmt.Sprintf(":%04X", port)) {
				return true
			}
		}
	}
	return false
}
