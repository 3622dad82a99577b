package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	cniversion "github.com/containernetworking/cni/pkg/version"

	"github.com/minik8s/minik8s/pkg/network/cniconf"
)

// NetworkName names the generated CNI network, in libcni's result cache and in host-local's
// data directory (IPAMDataDir/NetworkName/IP).
const NetworkName = cniconf.NetworkName

// podIfName is the pod's interface, as in Kubernetes.
const podIfName = "eth0"

// Where the node's network configuration comes from (minilet --cni-config).
const (
	ConfigAuto = "auto" // generated from the pod CIDR and written to ConfDir
	ConfigFile = "file" // the operator's own, read from ConfDir and used as is
)

// Config describes one node's pod network.
type Config struct {
	Source      string   // ConfigAuto (default) or ConfigFile
	ConfDir     string   // where the conflist is written (auto) or read (file)
	PluginDirs  []string // where CNI plugin binaries live, e.g. /usr/lib/cni
	BridgeName  string   // auto: the node's pod bridge, e.g. cni0
	PodCIDR     string   // auto: the node's pod range; the bridge takes its first address
	CacheDir    string   // libcni result cache; per node, never the shared /var/lib/cni
	IPAMDataDir string   // auto: host-local allocations; per node, never the shared /var/lib/cni
	MTU         int      // auto: pod and bridge MTU; 0 keeps the plugin's default
}

// PodRef identifies the pod a sandbox belongs to; it reaches the plugins as CNI_ARGS.
type PodRef struct {
	Namespace, Name, UID string
}

// PodOptions are a pod's per-sandbox network settings, handed to the plugins as capability
// arguments.
type PodOptions struct {
	Ports     []PortMapping      // hostPorts (portmap's portMappings)
	Bandwidth *cniconf.Bandwidth // traffic shaping (bandwidth's bandwidth)
}

// PortMapping is a hostPort of a pod container, handed to the portmap plugin in the
// shape of its portMappings capability.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"` // tcp, udp or sctp
	HostIP        string `json:"hostIP,omitempty"`
}

// ErrNotInitialized: the operator's network (--cni-config=file) has no configuration yet,
// in containerd's CRI's words while no CNI is installed.
var ErrNotInitialized = errors.New("cni plugin not initialized")

// CNI wires pod sandboxes into the node's network through libcni.
type CNI struct {
	lib *libcni.CNIConfig
	// operatorDir is the --cni-config=file directory the network is read from, again
	// whenever its first configuration file changes ("" when generated).
	operatorDir string
	pluginDirs  []string

	mu       sync.Mutex
	list     *libcni.NetworkConfigList
	loadErr  error // why the operator's configuration could not be used (list is nil)
	confPath string
	loaded   cniconf.File // the operator's file list and loadErr come from
}

// NewCNI checks cfg and prepares the network configuration: generated from the pod CIDR and
// written to ConfDir (auto), or the operator's conflist read from ConfDir (file). Every
// plugin binary the configuration runs must be present.
func NewCNI(cfg Config) (*CNI, error) {
	if len(cfg.PluginDirs) == 0 {
		return nil, errors.New("CNI: no plugin directory given")
	}
	if cfg.CacheDir == "" || cfg.ConfDir == "" {
		return nil, errors.New("CNI cache and configuration directories must be set (per node, not /var/lib/cni)")
	}
	c := &CNI{lib: libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir, nil)}
	switch cfg.Source {
	case ConfigAuto, "":
		if cfg.IPAMDataDir == "" {
			return nil, errors.New("CNI: host-local data directory must be set (per node, not /var/lib/cni)")
		}
		raw, err := cniconf.Generate(cniconf.Params{BridgeName: cfg.BridgeName, PodCIDR: cfg.PodCIDR, IPAMDataDir: cfg.IPAMDataDir, MTU: cfg.MTU})
		if err != nil {
			return nil, err
		}
		if c.list, err = libcni.ConfListFromBytes(raw); err != nil {
			return nil, fmt.Errorf("parse generated CNI conflist: %w", err)
		}
		if err := checkPlugins(cfg.PluginDirs, cniconf.PluginTypes(c.list)); err != nil {
			return nil, err
		}
		if c.confPath, err = cniconf.Write(cfg.ConfDir, raw); err != nil {
			return nil, err
		}
	case ConfigFile:
		// None yet is a node waiting for its CNI to be installed (as by a DaemonSet),
		// not ready until then; a broken one is a mistake to name now.
		c.operatorDir, c.pluginDirs = cfg.ConfDir, cfg.PluginDirs
		c.loadErr = ErrNotInitialized // what an empty directory (the zero File) gives
		if _, err := c.network(); err != nil && !errors.Is(err, ErrNotInitialized) {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("CNI configuration source %q: want %q or %q", cfg.Source, ConfigAuto, ConfigFile)
	}
	return c, nil
}

// Ready says whether pods can be set up: nil while the network has a usable configuration.
// The operator's (--cni-config=file) is read again whenever the directory's first
// configuration file is another or has changed, as containerd's CRI watches the
// directory: ErrNotInitialized while there is none (a node whose CNI a DaemonSet has not
// installed yet), or what is wrong with the one there. The node status loop calls it
// every few seconds, as the kubelet asks the runtime.
func (c *CNI) Ready() error {
	_, err := c.network()
	return err
}

// network is the configuration pods are set up with, or why there is none.
func (c *CNI) network() (*libcni.NetworkConfigList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.operatorDir == "" {
		return c.list, nil
	}
	first, err := cniconf.First(c.operatorDir)
	if err != nil && !errors.Is(err, cniconf.ErrNoConfig) {
		return nil, err
	}
	if first != c.loaded {
		c.loaded = first
		c.list, c.confPath, c.loadErr = c.load(first)
	}
	return c.list, c.loadErr
}

// load reads the operator's configuration from file (none: not initialized), every
// plugin it names present.
func (c *CNI) load(file cniconf.File) (*libcni.NetworkConfigList, string, error) {
	if file.Path == "" {
		return nil, "", ErrNotInitialized
	}
	list, err := cniconf.LoadFile(file.Path)
	if err != nil {
		return nil, "", err
	}
	if err := checkPlugins(c.pluginDirs, cniconf.PluginTypes(list)); err != nil {
		return nil, "", fmt.Errorf("CNI configuration %s: %w", file.Path, err)
	}
	return list, file.Path, nil
}

// ConfPath is the conflist the network runs from ("" while it is awaited).
func (c *CNI) ConfPath() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.confPath
}

// Name is the network's name (host-local keeps its allocations under IPAMDataDir/Name).
func (c *CNI) Name() string {
	list, err := c.network()
	if err != nil {
		return ""
	}
	return list.Name
}

func checkPlugins(dirs, types []string) error {
	var missing []string
	for _, name := range types {
		if !pluginPresent(dirs, name) {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("CNI plugin %s not found in %s (--cni-bin-dir; Debian: apt-get install containernetworking-plugins)",
			strings.Join(missing, ", "), strings.Join(dirs, ":"))
	}
	return nil
}

func pluginPresent(dirs []string, name string) bool {
	for _, dir := range dirs {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// runtimeConf is what kubelet passes for a sandbox: its id, netns, eth0 and the pod identity.
func runtimeConf(id, netnsPath string, pod PodRef) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID: id,
		NetNS:       netnsPath,
		IfName:      podIfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", id},
			{"K8S_POD_UID", pod.UID},
		},
	}
}

// SetUp attaches the sandbox id, whose network namespace is at netnsPath, to the node network
// (eth0 on the bridge, lo up, hostPorts and traffic shaping from opts) and returns the pod's IP. On failure it
// releases whatever the plugins had already set up.
func (c *CNI) SetUp(ctx context.Context, id, netnsPath string, pod PodRef, opts PodOptions) (net.IP, error) {
	list, err := c.network()
	if err != nil {
		return nil, fmt.Errorf("set up network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	rt := runtimeConf(id, netnsPath, pod)
	rt.CapabilityArgs = map[string]any{}
	if len(opts.Ports) > 0 {
		mappings := make([]PortMapping, len(opts.Ports))
		for i, p := range opts.Ports {
			p.Protocol = strings.ToLower(p.Protocol)
			mappings[i] = p
		}
		rt.CapabilityArgs["portMappings"] = mappings
	}
	if opts.Bandwidth != nil {
		rt.CapabilityArgs["bandwidth"] = opts.Bandwidth
	}
	res, err := c.lib.AddNetworkList(ctx, list, rt)
	if err == nil {
		var ip net.IP
		if ip, err = podIP(res); err == nil {
			return ip, nil
		}
	}
	err = fmt.Errorf("set up network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	if delErr := c.lib.DelNetworkList(context.WithoutCancel(ctx), list, rt); delErr != nil {
		err = errors.Join(err, fmt.Errorf("undo partial set-up: %w", delErr))
	}
	return nil, err
}

// podIP picks the address the plugins gave the pod's own interface.
func podIP(res types.Result) (net.IP, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("convert CNI result: %w", err)
	}
	for _, ipc := range r.IPs {
		if ipc.Interface != nil && *ipc.Interface < len(r.Interfaces) && r.Interfaces[*ipc.Interface].Sandbox != "" {
			return ipc.Address.IP, nil
		}
	}
	return nil, fmt.Errorf("CNI result has no address on the pod interface: %v", r)
}

// TearDown detaches the sandbox from the node network and frees its IP. It succeeds when the
// sandbox was already torn down or its network namespace is gone.
func (c *CNI) TearDown(ctx context.Context, id, netnsPath string, pod PodRef) error {
	list, err := c.network()
	if err != nil {
		return fmt.Errorf("tear down network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	rt := runtimeConf(id, netnsPath, pod)
	// portmap removes its rules from the mappings given at ADD, which libcni cached.
	if _, cached, err := c.lib.GetNetworkListCachedConfig(list, rt); err == nil && cached != nil {
		rt = cached
	}
	if !IsNetNS(netnsPath) { // gone, or a stale file after a reboot
		rt.NetNS = "" // the spec lets DEL go without a namespace: plugins then only free state
	}
	if err := c.lib.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("tear down network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	return nil
}

// Check asks the plugins whether the sandbox's network is still as ADD left it (CNI CHECK:
// the pod's interface, address and routes, the bridge, hostPort rules, shaping). A network
// whose cniVersion predates CHECK, or that disables it, passes.
func (c *CNI) Check(ctx context.Context, id, netnsPath string, pod PodRef) error {
	list, err := c.network()
	if err != nil {
		return fmt.Errorf("check network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	if ok, _ := cniversion.GreaterThanOrEqualTo(list.CNIVersion, "0.4.0"); !ok || list.DisableCheck {
		return nil
	}
	rt := runtimeConf(id, netnsPath, pod)
	if _, cached, err := c.lib.GetNetworkListCachedConfig(list, rt); err == nil && cached != nil {
		rt = cached // with the capability arguments of ADD, which portmap and bandwidth check
	}
	if err := c.lib.CheckNetworkList(ctx, checkList(list, rt), rt); err != nil {
		return fmt.Errorf("check network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	return nil
}

// checkList is the network without the plugins whose CHECK is broken in the plugin releases
// minilet runs with (Debian's 1.1.x): portmap checks an IPv6 DNAT chain even for an
// IPv4-only pod ("could not check ipv6 dnat") wherever ip6tables exists, and bandwidth
// dereferences a nil limit for a pod without one.
func checkList(network *libcni.NetworkConfigList, rt *libcni.RuntimeConf) *libcni.NetworkConfigList {
	_, shaped := rt.CapabilityArgs["bandwidth"]
	list := *network
	list.Plugins = nil
	for _, p := range network.Plugins {
		if p.Network.Type != "portmap" && (p.Network.Type != "bandwidth" || shaped) {
			list.Plugins = append(list.Plugins, p)
		}
	}
	return &list
}
