// Package cniconf decides a node's CNI network configuration: the conflist minilet
// generates from the node's pod CIDR (bridge, host-local, portmap, bandwidth, loopback),
// or an operator's own conflist read from a directory; and the per-pod bandwidth
// capability from the pod's kubernetes.io/*-bandwidth annotations.
package cniconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NetworkName names the generated network (in libcni's cache and host-local's data dir).
const NetworkName = "minik8s"

// FileName is what the generated conflist is written as in the configuration directory.
const FileName = "10-minik8s.conflist"

// Version is the cniVersion of the generated conflist: the newest Debian's plugins
// (containernetworking-plugins 1.1.x) speak.
const Version = "1.0.0"

// Plugins are the plugin binaries the generated conflist uses.
var Plugins = []string{"bridge", "host-local", "portmap", "bandwidth", "loopback"}

// Params are what the generated conflist depends on.
type Params struct {
	BridgeName  string // e.g. cni0
	PodCIDR     string // the bridge takes its first address, pods the rest
	IPAMDataDir string // host-local allocations, per node
	MTU         int    // pods' and bridge's MTU; 0 leaves the plugin's default
}

type confList struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgeConf struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge"`
	IsGateway   bool     `json:"isGateway"`
	HairpinMode bool     `json:"hairpinMode"`
	MTU         int      `json:"mtu,omitempty"`
	IPAM        ipamConf `json:"ipam"`
}

type ipamConf struct {
	Type    string                `json:"type"`
	Ranges  [][]map[string]string `json:"ranges"`
	Routes  []map[string]string   `json:"routes"`
	DataDir string                `json:"dataDir"`
}

type capConf struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
}

// Generate is the node network as JSON: a bridge whose address is the pods' default
// gateway (no ipMasq: egress masquerade is minilet's own single rule), host-local
// addresses from the pod CIDR, portmap for hostPorts, bandwidth for the pods' bandwidth
// annotations, and lo up in every pod.
func Generate(p Params) ([]byte, error) {
	if p.BridgeName == "" || len(p.BridgeName) > 15 {
		return nil, fmt.Errorf("CNI bridge name %q must have 1 to 15 characters", p.BridgeName)
	}
	_, subnet, err := net.ParseCIDR(p.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", p.PodCIDR, err)
	}
	if ones, bits := subnet.Mask.Size(); bits-ones < 2 {
		return nil, fmt.Errorf("pod CIDR %s has no room for a gateway and pods", subnet)
	}
	if p.IPAMDataDir == "" {
		return nil, errors.New("host-local data directory must be set (per node, not /var/lib/cni)")
	}
	if p.MTU < 0 {
		return nil, fmt.Errorf("MTU %d is negative", p.MTU)
	}
	defaultDst := "0.0.0.0/0"
	if subnet.IP.To4() == nil {
		defaultDst = "::/0"
	}
	list := confList{
		CNIVersion: Version,
		Name:       NetworkName,
		Plugins: []any{
			bridgeConf{
				Type: "bridge", Bridge: p.BridgeName, IsGateway: true, HairpinMode: true, MTU: p.MTU,
				IPAM: ipamConf{
					Type:    "host-local",
					Ranges:  [][]map[string]string{{{"subnet": subnet.String()}}},
					Routes:  []map[string]string{{"dst": defaultDst}},
					DataDir: p.IPAMDataDir,
				},
			},
			capConf{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
			capConf{Type: "bandwidth", Capabilities: map[string]bool{"bandwidth": true}},
			capConf{Type: "loopback"},
		},
	}
	return json.MarshalIndent(list, "", "  ")
}

// Write stores raw as dir/FileName (atomically), where people and tools look for it.
func Write(dir string, raw []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create CNI configuration directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return "", fmt.Errorf("write CNI configuration: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write CNI configuration: %w", err)
	}
	return path, nil
}

// ErrNoConfig: the configuration directory holds no network yet.
var ErrNoConfig = errors.New("no CNI configuration")

// File is the configuration file a network is read from, as it was when looked at: a
// change of its size or modification time is a new configuration.
type File struct {
	Path             string
	Size, ModifiedNs int64
}

// First is the file the operator's network is read from, as the kubelet's CNI and
// containerd pick it: the first in name order ending in .conflist, .conf or .json. A dir
// without one is ErrNoConfig.
func First(dir string) (File, error) {
	files, err := libcni.ConfFiles(dir, []string{".conflist", ".conf", ".json"})
	if err != nil {
		return File{}, fmt.Errorf("read CNI configuration directory %s: %w", dir, err)
	}
	if len(files) == 0 {
		return File{}, fmt.Errorf("%w (*.conflist, *.conf, *.json) in %s (--cni-conf-dir)", ErrNoConfig, dir)
	}
	info, err := os.Stat(files[0]) // ConfFiles sorts by name
	if err != nil {
		return File{}, fmt.Errorf("CNI configuration %s: %w", files[0], err)
	}
	return File{Path: files[0], Size: info.Size(), ModifiedNs: info.ModTime().UnixNano()}, nil
}

// LoadFile reads a network from path; a single-plugin .conf becomes a list of one.
func LoadFile(path string) (*libcni.NetworkConfigList, error) {
	var list *libcni.NetworkConfigList
	var err error
	if strings.HasSuffix(path, ".conflist") {
		list, err = libcni.ConfListFromFile(path)
	} else {
		var conf *libcni.NetworkConfig
		if conf, err = libcni.ConfFromFile(path); err == nil {
			list, err = libcni.ConfListFromConf(conf)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("CNI configuration %s: %w", path, err)
	}
	if len(list.Plugins) == 0 {
		return nil, fmt.Errorf("CNI configuration %s lists no plugins", path)
	}
	return list, nil
}

// PluginTypes are the plugin binaries a network list runs (its IPAM plugins included).
func PluginTypes(list *libcni.NetworkConfigList) []string {
	var types []string
	seen := map[string]bool{}
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	for _, p := range list.Plugins {
		add(p.Network.Type)
		add(p.Network.IPAM.Type)
	}
	return types
}

// Pod annotations the kubelet reads for traffic shaping (k8s.io/kubernetes/pkg/util/bandwidth).
const (
	IngressBandwidthAnnotation = "kubernetes.io/ingress-bandwidth"
	EgressBandwidthAnnotation  = "kubernetes.io/egress-bandwidth"
)

// The limits the kubelet accepts for a bandwidth annotation.
var (
	minBandwidth = resource.MustParse("1k")
	maxBandwidth = resource.MustParse("1P")
)

// Bandwidth is the bandwidth plugin's capability argument: rates in bits per second,
// bursts in bits.
type Bandwidth struct {
	IngressRate  uint64 `json:"ingressRate,omitempty"`
	IngressBurst uint64 `json:"ingressBurst,omitempty"`
	EgressRate   uint64 `json:"egressRate,omitempty"`
	EgressBurst  uint64 `json:"egressBurst,omitempty"`
}

// PodBandwidth reads a pod's bandwidth annotations, nil when it has none. The burst is
// left as large as the plugin allows, as containerd's CRI plugin does, so only the rate
// shapes.
func PodBandwidth(annotations map[string]string) (*Bandwidth, error) {
	var bw Bandwidth
	for _, a := range []struct {
		key         string
		rate, burst *uint64
	}{
		{IngressBandwidthAnnotation, &bw.IngressRate, &bw.IngressBurst},
		{EgressBandwidthAnnotation, &bw.EgressRate, &bw.EgressBurst},
	} {
		v, ok := annotations[a.key]
		if !ok {
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s=%q is not a quantity: %w", a.key, v, err)
		}
		if q.Cmp(minBandwidth) < 0 || q.Cmp(maxBandwidth) > 0 {
			return nil, fmt.Errorf("annotation %s=%q is out of range (%s to %s bits per second)", a.key, v, minBandwidth.String(), maxBandwidth.String())
		}
		*a.rate, *a.burst = uint64(q.Value()), math.MaxInt32
	}
	if bw == (Bandwidth{}) {
		return nil, nil
	}
	return &bw, nil
}
