// Package cluster brings up a minik8s cluster on a lab (pkg/lab): a containerd for the lab,
// miniapi in the control-plane namespace (or, highly available, etcd and miniapi on each
// control-plane member behind an API balancer: ha.go), one minilet and one miniproxy per node namespace,
// images preloaded;
// and takes it down again. minilab and the end-to-end tests use it.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/deploy/addons"
	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/clusterdefaults"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/forward"
	"github.com/minik8s/minik8s/pkg/network/nodenet"
	"github.com/minik8s/minik8s/pkg/pki"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/stats"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// APIPort is the lab API server's port on the control-plane address.
const APIPort = clusterdefaults.APIServerPort

// LoadBalancerPool is where the lab's LoadBalancer Services get their addresses: the top
// of the lab segment, reachable from every lab node, routed nowhere else.
const LoadBalancerPool = "10.200.0.200-10.200.0.250"

// Images preloaded on every node (the pause image minilet imports itself).
var Images = []string{"netexec.tar", "busybox.tar"}

// Options say what to bring up and with which binaries.
type Options struct {
	Name      string
	Nodes     int
	BinDir    string    // miniapi, minilet and miniproxy
	ImagesDir string    // OCI tarballs from `make images`
	Progress  io.Writer // one line per step
	Timeout   time.Duration
	// PodNetwork is minilet's --pod-network on every node (host-gw when empty); Segments
	// puts the nodes on that many switches joined by a router (lab.Spec).
	PodNetwork string
	Segments   int
	DNS        bool // deploy cluster DNS (the CoreDNS add-on, dns.go) once the nodes are Ready
	// Join is how nodes get their credentials: JoinCertificate ("" too) or JoinToken.
	Join string
	// SigningDuration is miniapi's --cluster-signing-duration (0: its default, a year):
	// how long the node certificates of JoinToken live before minilet renews them.
	SigningDuration time.Duration
	// NodeMonitorGracePeriod is miniapi's --node-monitor-grace-period (0: its default,
	// 40s): how long a silent node stays Ready.
	NodeMonitorGracePeriod time.Duration
	// ProxyMode is miniproxy's --proxy-mode on every node: iptables (also "") or ipvs,
	// refused up front where the kernel has no ip_vs.
	ProxyMode string
	// Publish are --publish values (ParsePublish): host loopback ports forwarded to nodes'
	// ports once the nodes are Ready. The API server is always published (publishAPI).
	Publish []string
	// Uplink adds the lab's way out (lab.Uplink) with its echo server (UplinkEchoProcess).
	Uplink bool
	// EvictionHard is minilet's --eviction-hard on every node (DefaultEvictionHard when
	// empty).
	EvictionHard string
	// ControlPlanes > 1 makes the lab highly available: that many control-plane members,
	// each an etcd member and a miniapi, behind the API balancer (ha.go).
	ControlPlanes int
	// EvictionPressureTransitionPeriod is minilet's --eviction-pressure-transition-period
	// on every node (the kubelet's 5m when 0).
	EvictionPressureTransitionPeriod time.Duration
	// NodeMemory, when set (a quantity: 768Mi), is the memory limit of each node's cgroup,
	// which its minilet reports as capacity and measures pressure against, so pressure
	// on a node never presses the host.
	NodeMemory string
}

// UplinkEchoProcess is the uplink host's web server (minilab uplink-echo), on port 80.
const UplinkEchoProcess = "uplink-echo"

// UpstreamDNSProcess is the lab process of the upstream DNS server.
const UpstreamDNSProcess = "upstream-dns"

// DefaultEvictionHard is minilet's --eviction-hard on lab nodes: the kubelet's memory
// threshold and no disk one. Every node shares the host's filesystem, so a host past 85%
// full would put DiskPressure (and its NoSchedule taint) on all of them at once; kind's
// and minikube's nodes leave their disk thresholds at 0% for the same reason.
const DefaultEvictionHard = "memory.available<100Mi,nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%,imagefs.inodesFree<0%"

// RegistryAddr is where a lab's own image registry listens, in the control-plane
// namespace; its nodes pull from it over plain HTTP (--insecure-registry).
const RegistryAddr = lab.ControlPlaneIP + ":5000"

// CgroupRoot is where a lab node's pods get their cgroups: apart from every other
// node's and the host's own.
func CgroupRoot(n lab.Node) string { return "/minik8s/" + n.NetNS }

// daemonsCgroup holds a lab node's minilet and miniproxy, beside its pods under
// CgroupRoot, so the node's usage (minilet --node-cgroup) is the node's own, as
// system.slice on a real node.
func daemonsCgroup(n lab.Node) string { return CgroupRoot(n) + "/system.slice" }

// ContainerdSocket is the lab containerd's socket.
func ContainerdSocket(l *lab.Lab) string {
	return filepath.Join(l.RunDir, "containerd", "containerd.sock")
}

// ContainerdNamespace is a node's containerd namespace: the node's netns name, unique per
// lab and node, so two labs' cgroups never mix either.
func ContainerdNamespace(n lab.Node) string { return n.NetNS }

func apiDataDir(l *lab.Lab) string { return filepath.Join(l.StateDir, "miniapi") }

func serverURL() string { return fmt.Sprintf("https://%s:%d", lab.ControlPlaneIP, APIPort) }

// Up builds the lab and starts the cluster on it; on failure it removes what it made.
func Up(ctx context.Context, o Options) (*lab.Lab, error) {
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Join != "" && o.Join != JoinCertificate && o.Join != JoinToken {
		return nil, fmt.Errorf("join %q: want %s or %s", o.Join, JoinCertificate, JoinToken)
	}
	if err := checkProxyMode(o.ProxyMode); err != nil {
		return nil, err
	}
	bins := []string{"miniapi", "minilet", "miniproxy", "minilab"}
	if o.ControlPlanes > 1 {
		bins = append(bins, "etcd")
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(o.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s (run `make build`; `make etcd` builds etcd): %w", bin, o.BinDir, err)
		}
	}
	for _, img := range o.images() {
		if _, err := os.Stat(filepath.Join(o.ImagesDir, img)); err != nil {
			return nil, fmt.Errorf("image %s not found in %s (run `make images`): %w", img, o.ImagesDir, err)
		}
	}
	if _, err := lab.Load(o.Name); err == nil {
		return nil, fmt.Errorf("lab %q already exists; remove it first with: minilab down --name %s", o.Name, o.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	step(o.Progress, "creating lab %q: switch, control plane, client and %d node namespaces", o.Name, o.Nodes)
	o.PodNetwork = cmp.Or(o.PodNetwork, nodenet.ModeHostGW)
	l, err := lab.Create(lab.Spec{Name: o.Name, Nodes: o.Nodes, Segments: o.Segments, PodNetwork: o.PodNetwork, Uplink: o.Uplink, ControlPlanes: o.ControlPlanes})
	if err != nil {
		return nil, err
	}
	var pubs []lab.Publication
	for _, spec := range o.Publish {
		p, err := ParsePublish(l, spec)
		if err != nil {
			return nil, errors.Join(err, lab.Destroy(o.Name))
		}
		pubs = append(pubs, p)
	}
	if err := start(ctx, l, o, pubs); err != nil {
		if derr := Down(context.Background(), o.Name); derr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", derr))
		}
		return nil, err
	}
	return l, nil
}

func start(ctx context.Context, l *lab.Lab, o Options, pubs []lab.Publication) error {
	step(o.Progress, "starting containerd for the lab")
	if err := startContainerd(ctx, l); err != nil {
		return err
	}
	if err := preloadImages(ctx, l, o); err != nil {
		return err
	}

	ca, err := pki.EnsureCA(controlplane.PKIDir(apiDataDir(l)))
	if err != nil {
		return err
	}
	if len(l.ControlPlanes) > 0 {
		if err := startControlPlanes(ctx, l, o, ca); err != nil {
			return err
		}
	} else {
		step(o.Progress, "starting miniapi in %s (%s)", l.ControlPlane.NetNS, serverURL())
		_, err = l.Start(lab.Process{Name: "miniapi", NetNS: l.ControlPlane.NetNS, Args: miniapiArgs(l, o, apiDataDir(l), lab.ControlPlaneIP)})
		if err != nil {
			return err
		}
		l.Kubeconfig = controlplane.AdminKubeconfig(apiDataDir(l))
	}
	if err := l.Save(); err != nil {
		return err
	}
	// The waits poll through client-go, not a kubectl process per poll: where every process
	// is slow to start (a lab inside an emulated VM) those polls were most of up's time.
	var client kubernetes.Interface
	if err := waitFor(ctx, "miniapi to serve", func() bool {
		if client == nil {
			cfg, err := RESTConfig(l) // miniapi writes the kubeconfig as it starts
			if err != nil {
				return false
			}
			if client, err = kubernetes.NewForConfig(cfg); err != nil {
				return false
			}
		}
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil
	}); err != nil {
		return err
	}
	if err := publishAPI(ctx, l, o.BinDir); err != nil {
		return err
	}
	step(o.Progress, "API server published on the host's loopback: %s (kubeconfig %s)", l.Published[0].Listen, l.HostKubeconfig)

	// The DNS outside the cluster, which the nodes' resolv.conf names (minilab upstream-dns).
	step(o.Progress, "starting the lab's upstream DNS server on %s:53 (names in %s)", l.UpstreamDNS, l.UpstreamDNSHosts)
	if _, err := l.Start(lab.Process{Name: UpstreamDNSProcess, NetNS: l.ControlPlane.NetNS, Args: []string{
		filepath.Join(o.BinDir, "minilab"), "upstream-dns", "--listen", net.JoinHostPort(l.UpstreamDNS, "53"), "--hosts", l.UpstreamDNSHosts,
	}}); err != nil {
		return err
	}

	if l.Uplink != nil {
		step(o.Progress, "starting the uplink's web server on %s:80 (it answers with the caller's address)", l.Uplink.IP)
		if _, err := l.Start(lab.Process{Name: UplinkEchoProcess, NetNS: l.Uplink.NetNS, Args: []string{
			filepath.Join(o.BinDir, "minilab"), "uplink-echo", "--listen", net.JoinHostPort(l.Uplink.IP, "80"),
		}}); err != nil {
			return err
		}
	}

	var token string
	if o.Join == JoinToken {
		step(o.Progress, "creating a bootstrap token for the nodes to join with")
		if token, err = createBootstrapToken(ctx, l, time.Hour); err != nil {
			return err
		}
	}
	for _, n := range l.Nodes {
		if o.NodeMemory != "" {
			limit := resource.MustParse(o.NodeMemory) // checked by Validate
			if err := cm.SetMemoryLimit(CgroupRoot(n), limit.Value()); err != nil {
				return fmt.Errorf("limit %s's memory to %s: %w", n.Name, o.NodeMemory, err)
			}
		}
		step(o.Progress, "starting minilet on %s (%s, pods %s)", n.Name, n.IP, n.PodCIDR)
		credentials, err := nodeCredentials(l, n, ca, o.Join, token)
		if err != nil {
			return err
		}
		// The node API's certificate (kubectl logs reaches minilet through miniapi).
		nodeAPI, err := nodeAPIFlags(l, n, ca, o.Join)
		if err != nil {
			return err
		}
		_, err = l.Start(lab.Process{Name: "minilet-" + n.Name, NetNS: n.NetNS, Cgroup: daemonsCgroup(n), Args: append(append(append([]string{
			filepath.Join(o.BinDir, "minilet")}, credentials...), nodeAPI...),
			"--node-name", n.Name, "--node-ip", n.IP, "--pod-cidr", n.PodCIDR,
			"--containerd", ContainerdSocket(l), "--containerd-namespace", ContainerdNamespace(n),
			"--root-dir", n.RunDir, "--pod-manifest-path", n.ManifestDir,
			"--insecure-registry", RegistryAddr, "--cgroup-root", CgroupRoot(n), "--node-cgroup", CgroupRoot(n),
			"--pod-network", l.PodNetwork,
			"--cluster-dns", addons.ClusterDNSIP, "--cluster-domain", addons.ClusterDomain,
			"--resolv-conf", n.ResolvConf, "--eviction-hard", cmp.Or(o.EvictionHard, DefaultEvictionHard),
			"--eviction-pressure-transition-period", cmp.Or(o.EvictionPressureTransitionPeriod, stats.DefaultPressureTransitionPeriod).String(),
		)})
		if err != nil {
			return err
		}
		step(o.Progress, "starting miniproxy on %s", n.Name)
		// miniproxy is system:kube-proxy (role system:node-proxier), as kube-proxy is.
		proxyKubeconfig := filepath.Join(l.StateDir, n.Name+"-proxy.kubeconfig")
		if err := ca.WriteKubeconfig(proxyKubeconfig, serverURL(), "system:kube-proxy", nil); err != nil {
			return err
		}
		args := []string{
			filepath.Join(o.BinDir, "miniproxy"), "--kubeconfig", proxyKubeconfig,
			"--hostname-override", n.Name, "--cluster-cidr", l.ClusterCIDR,
			"--healthz-bind-address", net.JoinHostPort(n.IP, strconv.Itoa(clusterdefaults.ProxyHealthzPort)),
			// LoadBalancer addresses (LoadBalancerPool, on the lab segment) answer ARP from
			// one elected node, so the lab's client namespace reaches them.
			"--lb-interfaces", lab.MemberInterface,
			"--proxy-mode", cmp.Or(o.ProxyMode, ProxyIPTables),
		}
		if o.ProxyMode == ProxyIPVS {
			// Every Service address is on each node's kube-ipvs0: without strict ARP every
			// node would answer ARP for the LoadBalancer ones (miniproxy refuses to start).
			args = append(args, "--ipvs-strict-arp")
		}
		_, err = l.Start(lab.Process{Name: "miniproxy-" + n.Name, NetNS: n.NetNS, Cgroup: daemonsCgroup(n), Args: args})
		if err != nil {
			return err
		}
	}
	if err := waitNodesReady(ctx, l, client, o.Progress); err != nil {
		return err
	}
	if err := waitProxiesHealthy(ctx, l, o.Progress); err != nil {
		return err
	}
	for _, p := range pubs {
		step(o.Progress, "publishing %s on the host: %s from %s", p.Target, p.Listen, p.NetNS)
		if err := Publish(ctx, l, o.BinDir, p); err != nil {
			return err
		}
	}
	if o.Join == JoinToken {
		step(o.Progress, "approving the nodes' kubelet-serving CSRs as the cluster admin (kubectl certificate approve)")
		if err := waitFor(ctx, "each node's serving certificate", func() bool {
			issued, err := ApproveServingCSRs(ctx, l)
			return err == nil && issued == len(l.Nodes)
		}); err != nil {
			return err
		}
	}
	if err := deployStorage(ctx, l, o.Progress); err != nil {
		return err
	}
	if o.DNS {
		return deployDNS(ctx, l, ca, o.Progress)
	}
	return nil
}

// miniapiArgs are the flags of a lab miniapi serving on ip with its data in dataDir.
func miniapiArgs(l *lab.Lab, o Options, dataDir, ip string) []string {
	args := []string{
		filepath.Join(o.BinDir, "miniapi"), "--data-dir", dataDir,
		"--bind-address", ip, "--secure-port", fmt.Sprint(APIPort),
		"--service-cluster-ip-range", l.ServiceCIDR, "--loadbalancer-ip-pool", LoadBalancerPool,
	}
	if o.SigningDuration > 0 {
		args = append(args, "--cluster-signing-duration", o.SigningDuration.String())
	}
	if o.NodeMonitorGracePeriod > 0 {
		args = append(args, "--node-monitor-grace-period", o.NodeMonitorGracePeriod.String())
	}
	return args
}

func startContainerd(ctx context.Context, l *lab.Lab) error {
	root := filepath.Join(l.StateDir, "containerd")
	state := filepath.Join(l.RunDir, "containerd")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	config := filepath.Join(root, "config.toml")
	if err := os.WriteFile(config, runtime.DaemonConfig(root, filepath.Join(state, "state"), ContainerdSocket(l)), 0o644); err != nil {
		return err
	}
	if _, err := l.Start(lab.Process{Name: "containerd", Args: []string{"containerd", "--config", config}}); err != nil {
		return err
	}
	return waitFor(ctx, "containerd", func() bool {
		rt, err := runtime.New(ctx, ContainerdSocket(l), "default")
		if err != nil {
			return false
		}
		rt.Close()
		return true
	})
}

// preloadImages imports our images into every node's containerd namespace: there is no
// registry, and a lab node should start pods as fast as a node with a warm image cache.
func preloadImages(ctx context.Context, l *lab.Lab, o Options) error {
	for _, n := range l.Nodes {
		for _, img := range o.images() {
			step(o.Progress, "importing %s into %s", img, n.Name)
			f, err := os.Open(filepath.Join(o.ImagesDir, img))
			if err != nil {
				return err
			}
			_, err = importInto(ctx, l, n, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("import %s on %s: %w", img, n.Name, err)
			}
		}
	}
	return nil
}

func waitNodesReady(ctx context.Context, l *lab.Lab, client kubernetes.Interface, progress io.Writer) error {
	last := ""
	return waitFor(ctx, fmt.Sprintf("%d nodes to be Ready", len(l.Nodes)), func() bool {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		var states []string
		ready := 0
		for _, n := range nodes.Items {
			status := "Unknown"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					status = string(c.Status)
				}
			}
			// Ready and schedulable: the node lifecycle controller has taken away the
			// not-ready taint the node was created with, so pods made next (the add-ons'
			// replicas) may go to every node.
			if status == string(corev1.ConditionTrue) && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
			}) {
				ready++
			} else if status == string(corev1.ConditionTrue) {
				status += ",tainted"
			}
			states = append(states, n.Name+"="+status)
		}
		if out := strings.Join(states, " "); out != last {
			step(progress, "nodes: %s", out)
			last = out
		}
		return ready == len(l.Nodes)
	})
}

// waitProxiesHealthy waits for every node's miniproxy to answer /healthz 200, which it does
// once its first sync wrote the Services' rules: before that a Service the user creates
// right after up may not answer yet. A miniproxy that exited is reported with its log.
func waitProxiesHealthy(ctx context.Context, l *lab.Lab, progress io.Writer) error {
	step(progress, "waiting for miniproxy's first sync on every node (/healthz)")
	for _, n := range l.Nodes {
		nsPath := lab.NetNSPath(n.NetNS)
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, proto, addr string) (net.Conn, error) {
				return forward.DialInNetNS(ctx, nsPath, proto, addr)
			}}}
		url := "http://" + net.JoinHostPort(n.IP, strconv.Itoa(clusterdefaults.ProxyHealthzPort)) + "/healthz"
		var exited error
		err := waitFor(ctx, "miniproxy on "+n.Name+" to answer "+url, func() bool {
			if exited = l.Exited("miniproxy-" + n.Name); exited != nil {
				return true
			}
			resp, err := client.Get(url)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		client.CloseIdleConnections()
		if err := cmp.Or(exited, err); err != nil {
			return err
		}
	}
	return nil
}

// Down stops the cluster of lab name and removes the lab, also after a crash: the lab's
// containers are purged through its containerd (restarted if it died) before the lab's
// namespaces, links, mounts and directories go.
func Down(ctx context.Context, name string) error {
	l, err := lab.Load(name)
	if err != nil {
		return errors.Join(ignoreMissing(err), lab.Destroy(name))
	}
	var errs []error
	for _, p := range l.Processes {
		if strings.HasPrefix(p.Name, "minilet-") || strings.HasPrefix(p.Name, "miniproxy-") || strings.HasPrefix(p.Name, "miniapi") {
			if err := l.Stop(p.Name, 10*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(l.StateDir, "containerd", "config.toml")); err == nil {
		if rt, err := runtime.New(ctx, ContainerdSocket(l), "default"); err != nil {
			// containerd is gone: bring it back so its shims and containers are cleaned up properly.
			_ = l.Stop("containerd", time.Second)
			if err := startContainerd(ctx, l); err != nil {
				errs = append(errs, fmt.Errorf("restarting the lab's containerd to purge it: %w", err))
			}
		} else {
			rt.Close()
		}
		purgeCtx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := runtime.Purge(purgeCtx, ContainerdSocket(l)); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	for _, n := range l.Nodes {
		errs = append(errs, cm.RemoveRoot(CgroupRoot(n)))
	}
	// Their parent goes only when empty: a host cluster or another lab may use it.
	parents, _ := filepath.Glob("/sys/fs/cgroup/*/minik8s")
	for _, dir := range append(parents, "/sys/fs/cgroup/minik8s") {
		_ = os.Remove(dir)
	}
	return errors.Join(append(errs, lab.Destroy(name))...)
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Kubectl runs kubectl against the lab's API from inside the control-plane namespace (the
// host has no route into the lab) and returns its output.
func Kubectl(ctx context.Context, l *lab.Lab, args ...string) (string, error) {
	cmd := KubectlCommand(ctx, l, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := withoutStreamRace(out.String())
	if err != nil {
		return text, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(text))
	}
	return text, nil
}

// withoutStreamRace drops the line kubectl 1.32's WebSocket client logs when the empty
// frame that opens a stream arrives before it has set the stream up ("Unknown stream id 1,
// discarding message"): a race of that client's own, fixed in later client-go, which
// kube-apiserver's stream translator (ours too) meets alike. The frame carries no data.
func withoutStreamRace(out string) string {
	if !strings.Contains(out, "discarding message") {
		return out
	}
	lines := strings.SplitAfter(out, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !(strings.Contains(l, "websocket.go:") && strings.Contains(l, "Unknown stream id") && strings.Contains(l, "discarding message")) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "")
}

// RESTConfig is the lab admin's client configuration for client-go, its connections
// dialed from inside the control-plane namespace (the host has no route into the lab).
func RESTConfig(l *lab.Lab) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("lab kubeconfig: %w", err)
	}
	nsPath := lab.NetNSPath(l.ControlPlane.NetNS)
	cfg.Dial = func(ctx context.Context, proto, addr string) (net.Conn, error) {
		return forward.DialInNetNS(ctx, nsPath, proto, addr)
	}
	return cfg, nil
}

// KubectlCommand is kubectl against the lab, ready for the caller to wire its stdio.
func KubectlCommand(ctx context.Context, l *lab.Lab, args ...string) *exec.Cmd {
	return lab.Command(ctx, l.ControlPlane.NetNS, kubectlPath(), append([]string{"--kubeconfig", l.Kubeconfig}, args...)...)
}

// kubectlPath is the kubectl on PATH, else the one `make` builds beside minilab
// (bin/kubectl) on a host that has none.
func kubectlPath() string {
	if path, err := exec.LookPath("kubectl"); err == nil {
		return path
	}
	if exe, err := os.Executable(); err == nil {
		if path := filepath.Join(filepath.Dir(exe), "kubectl"); isExecutable(path) {
			return path
		}
	}
	return "kubectl" // not found: the error names it
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

func waitFor(ctx context.Context, what string, ok func() bool) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

func step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "==> "+format+"\n", args...)
}
