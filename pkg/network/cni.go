package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// NetworkName names the CNI network in the generated conflist, in libcni's result cache and
// in host-local's data directory (IPAMDataDir/NetworkName/IP).
const NetworkName = "minik8s"

// podIfName is the pod's interface, as in Kubernetes.
const podIfName = "eth0"

// requiredPlugins are the plugin binaries the generated conflist uses.
var requiredPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// Config describes one node's pod network.
type Config struct {
	PluginDirs  []string // where CNI plugin binaries live, e.g. /usr/lib/cni
	BridgeName  string   // the node's pod bridge, e.g. cni0
	PodCIDR     string   // the node's pod range; the bridge takes its first address
	CacheDir    string   // libcni result cache; per node, never the shared /var/lib/cni
	IPAMDataDir string   // host-local allocations; per node, never the shared /var/lib/cni
	MTU         int      // pod and bridge MTU; 0 keeps the plugin's default
}

// PodRef identifies the pod a sandbox belongs to; it reaches the plugins as CNI_ARGS.
type PodRef struct {
	Namespace, Name, UID string
}

// PortMapping is a hostPort of a pod container, handed to the portmap plugin in the
// shape of its portMappings capability.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"` // tcp, udp or sctp
	HostIP        string `json:"hostIP,omitempty"`
}

// CNI wires pod sandboxes into the node's bridge network through libcni.
type CNI struct {
	lib  *libcni.CNIConfig
	list *libcni.NetworkConfigList
}

// NewCNI checks cfg (plugin binaries present, pod CIDR valid, per-node directories set) and
// prepares the network configuration. It also writes the conflist to
// CacheDir/../net.d/10-minik8s.conflist for people to read; nothing reads it back.
func NewCNI(cfg Config) (*CNI, error) {
	if len(cfg.PluginDirs) == 0 {
		return nil, errors.New("CNI: no plugin directory given")
	}
	for _, name := range requiredPlugins {
		if !pluginPresent(cfg.PluginDirs, name) {
			return nil, fmt.Errorf("CNI plugin %q not found in %s (Debian: apt-get install containernetworking-plugins)",
				name, strings.Join(cfg.PluginDirs, ":"))
		}
	}
	if cfg.BridgeName == "" || len(cfg.BridgeName) > 15 {
		return nil, fmt.Errorf("CNI bridge name %q must have 1 to 15 characters", cfg.BridgeName)
	}
	_, subnet, err := net.ParseCIDR(cfg.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", cfg.PodCIDR, err)
	}
	if cfg.CacheDir == "" || cfg.IPAMDataDir == "" {
		return nil, errors.New("CNI cache and IPAM data directories must be set (per node, not /var/lib/cni)")
	}
	if cfg.MTU < 0 {
		return nil, fmt.Errorf("MTU %d is negative", cfg.MTU)
	}

	raw, err := json.MarshalIndent(confList(cfg, subnet), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode CNI conflist: %w", err)
	}
	list, err := libcni.ConfListFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse generated CNI conflist: %w", err)
	}
	writeConfListCopy(filepath.Join(filepath.Dir(filepath.Clean(cfg.CacheDir)), "net.d", "10-minik8s.conflist"), raw)
	return &CNI{
		lib:  libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir, nil),
		list: list,
	}, nil
}

func pluginPresent(dirs []string, name string) bool {
	for _, dir := range dirs {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// writeConfListCopy leaves the conflist where people look for one; failing to is only worth
// a warning because the network runs from the in-memory copy.
func writeConfListCopy(path string, raw []byte) {
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = os.WriteFile(path, append(raw, '\n'), 0o644)
	}
	if err != nil {
		slog.Warn("could not write a copy of the CNI conflist", "path", path, "err", err)
	}
}

type confListJSON struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgeJSON struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	IsGateway   bool     `json:"isGateway"`
	HairpinMode bool     `json:"hairpinMode"`
	MTU         int      `json:"mtu,omitempty"`
	IPAM        ipamJSON `json:"ipam"`
}

type ipamJSON struct {
	Type    string                `json:"type"`
	Ranges  [][]map[string]string `json:"ranges"`
	Routes  []map[string]string   `json:"routes"`
	DataDir string                `json:"dataDir"`
}

type portmapJSON struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
}

type loopbackJSON struct {
	Type string `json:"type"`
}

// confList is the node network: a bridge whose address is the pods' default gateway,
// host-local addresses from the pod CIDR, portmap for hostPorts, and lo up in every pod.
func confList(cfg Config, subnet *net.IPNet) confListJSON {
	defaultDst := "0.0.0.0/0"
	if subnet.IP.To4() == nil {
		defaultDst = "::/0"
	}
	return confListJSON{
		CNIVersion: "1.0.0",
		Name:       NetworkName,
		Plugins: []any{
			bridgeJSON{
				Type: "bridge", Bridge: cfg.BridgeName, IsGateway: true, HairpinMode: true, MTU: cfg.MTU,
				IPAM: ipamJSON{
					Type:    "host-local",
					Ranges:  [][]map[string]string{{{"subnet": subnet.String()}}},
					Routes:  []map[string]string{{"dst": defaultDst}},
					DataDir: cfg.IPAMDataDir,
				},
			},
			portmapJSON{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
			loopbackJSON{Type: "loopback"},
		},
	}
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
// (eth0 on the bridge, lo up, hostPorts from ports) and returns the pod's IP. On failure it
// releases whatever the plugins had already set up.
func (c *CNI) SetUp(ctx context.Context, id, netnsPath string, pod PodRef, ports ...PortMapping) (net.IP, error) {
	rt := runtimeConf(id, netnsPath, pod)
	if len(ports) > 0 {
		mappings := make([]PortMapping, len(ports))
		for i, p := range ports {
			p.Protocol = strings.ToLower(p.Protocol)
			mappings[i] = p
		}
		rt.CapabilityArgs = map[string]any{"portMappings": mappings}
	}
	res, err := c.lib.AddNetworkList(ctx, c.list, rt)
	if err == nil {
		var ip net.IP
		if ip, err = podIP(res); err == nil {
			return ip, nil
		}
	}
	err = fmt.Errorf("set up network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	if delErr := c.lib.DelNetworkList(context.WithoutCancel(ctx), c.list, rt); delErr != nil {
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
	rt := runtimeConf(id, netnsPath, pod)
	// portmap removes its rules from the mappings given at ADD, which libcni cached.
	if _, cached, err := c.lib.GetNetworkListCachedConfig(c.list, rt); err == nil && cached != nil {
		rt = cached
	}
	if !IsNetNS(netnsPath) { // gone, or a stale file after a reboot
		rt.NetNS = "" // the spec lets DEL go without a namespace: plugins then only free state
	}
	if err := c.lib.DelNetworkList(ctx, c.list, rt); err != nil {
		return fmt.Errorf("tear down network of pod %s/%s (sandbox %s): %w", pod.Namespace, pod.Name, id, err)
	}
	return nil
}
