package agent

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/imagegc"
	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
	"github.com/minik8s/minik8s/pkg/agent/sysctl"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nodenet"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/stats"
)

// Config is everything minilet's flags decide.
type Config struct {
	NodeName            string        // --node-name
	NodeIP              string        // --node-ip: InternalIP of the node and hostIP of its pods
	PodCIDR             string        // --pod-cidr: the node's spec.podCIDR, the range CNI hands out ("": the one miniapi assigns)
	RootDir             string        // --root-dir: everything minilet makes on disk lives below it
	ContainerdAddress   string        // --containerd
	ContainerdNamespace string        // --containerd-namespace
	CNIBinDir           string        // --cni-bin-dir
	CNIBridge           string        // --cni-bridge
	CNIConfig           string        // --cni-config: auto (generated from the pod CIDR) or file (the operator's, from CNIConfDir)
	CNIConfDir          string        // --cni-conf-dir ("": RootDir/cni/net.d)
	PodNetwork          string        // --pod-network: how pods reach other nodes' pods (host-gw, vxlan, none)
	PodManifestPath     string        // --pod-manifest-path: static pods
	FileCheckFrequency  time.Duration // --file-check-frequency: rescan of PodManifestPath
	InsecureRegistries  []string      // --insecure-registry: registries pulled from over plain HTTP
	// --image-gc-high-threshold, --image-gc-low-threshold: percent of the image filesystem.
	ImageGCHighThreshold, ImageGCLowThreshold int
	CgroupRoot                                string // --cgroup-root: pods' cgroups go below it
	NodeCgroup                                string // --node-cgroup: the node's usage in the stats ("": the machine's)
	PodMaxPids                                int64  // --pod-max-pids: per pod; <= 0 is no limit
	// --container-log-max-size, --container-log-max-files: rotation of container logs.
	ContainerLogMaxSize  string
	ContainerLogMaxFiles int
	// --system-reserved, --kube-reserved: resources name=quantity kept from pods.
	SystemReserved, KubeReserved map[string]string
	HealthzAddr                  string // host:port of /healthz and /metrics; empty serves nothing
	Profiling                    bool   // --profiling: /debug/pprof beside /healthz
	NetworkPolicy                bool   // --network-policy: enforce NetworkPolicies (pkg/network/policy)
	// --allowed-unsafe-sysctls: namespaced sysctls (or patterns ending in *) pods may set
	// beyond the kubelet's safe ones.
	AllowedUnsafeSysctls []string
	// The node API (pkg/nodeapi) on NodeIP:Port, served only with a certificate.
	Port                                         int    // --port
	TLSCertFile, TLSPrivateKeyFile, ClientCAFile string // --tls-cert-file, --tls-private-key-file, --client-ca-file
	// --rotate-server-certificates: the node API's certificate comes from kubelet-serving
	// CSRs (kept in CertDir, --cert-dir) instead of --tls-cert-file.
	RotateServerCertificates bool
	CertDir                  string
	// Pods' resolv.conf (podsync/poddns.go): --cluster-dns, --cluster-domain, --resolv-conf.
	ClusterDNS                []string
	ClusterDomain, ResolvConf string
	// --eviction-hard, --eviction-soft, --eviction-soft-grace-period and
	// --eviction-minimum-reclaim (the kubelet's syntax, e.g. memory.available<100Mi,
	// memory.available=1m30s), --eviction-max-pod-grace-period and
	// --eviction-pressure-transition-period: the node's pressure conditions and evictions.
	Eviction                         stats.EvictionFlags
	EvictionMaxPodGracePeriod        time.Duration
	EvictionPressureTransitionPeriod time.Duration
	// Ready is called once the node is registered and its status loop runs (nil: nothing).
	Ready func()
}

// Validate reports the first setting that cannot work, naming its flag.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name (--node-name) is required"))
	}
	if net.ParseIP(c.NodeIP) == nil {
		errs = append(errs, fmt.Errorf("node IP (--node-ip) %q is not an IP address", c.NodeIP))
	}
	if _, _, err := net.ParseCIDR(c.PodCIDR); c.PodCIDR != "" && err != nil {
		errs = append(errs, fmt.Errorf("pod CIDR (--pod-cidr) %q is not a CIDR", c.PodCIDR))
	}
	if c.CNIConfig != "" && c.CNIConfig != network.ConfigAuto && c.CNIConfig != network.ConfigFile {
		errs = append(errs, fmt.Errorf("--cni-config %q: want %s or %s", c.CNIConfig, network.ConfigAuto, network.ConfigFile))
	}
	if c.CNIConfDir != "" && !filepath.IsAbs(c.CNIConfDir) {
		errs = append(errs, fmt.Errorf("--cni-conf-dir %q must be an absolute path", c.CNIConfDir))
	}
	if err := nodenet.ValidateMode(c.PodNetwork); c.PodNetwork != "" && err != nil {
		errs = append(errs, fmt.Errorf("--pod-network: %w", err))
	}
	if _, err := stats.ParseThresholdConfig(c.Eviction); err != nil {
		errs = append(errs, err)
	}
	if _, err := sysctl.NewAdmission(c.AllowedUnsafeSysctls); err != nil {
		errs = append(errs, err)
	}
	if c.EvictionMaxPodGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--eviction-max-pod-grace-period %d must not be negative", int64(c.EvictionMaxPodGracePeriod/time.Second)))
	}
	if !filepath.IsAbs(c.RootDir) {
		errs = append(errs, fmt.Errorf("root dir (--root-dir) %q must be an absolute path", c.RootDir))
	}
	if c.ContainerdAddress == "" {
		errs = append(errs, errors.New("containerd address (--containerd) is required"))
	}
	if c.ContainerdNamespace == "" {
		errs = append(errs, errors.New("containerd namespace (--containerd-namespace) is required"))
	}
	if c.HealthzAddr != "" {
		if _, _, err := net.SplitHostPort(c.HealthzAddr); err != nil {
			errs = append(errs, fmt.Errorf("healthz address %q is not host:port: %w", c.HealthzAddr, err))
		}
	}
	for _, r := range c.InsecureRegistries {
		if r == "" || strings.ContainsAny(r, "/ ") {
			errs = append(errs, fmt.Errorf("insecure registry (--insecure-registry) %q must be host or host:port, without scheme or path", r))
		}
	}
	if err := imagegc.CheckThresholds(c.ImageGCHighThreshold, c.ImageGCLowThreshold); err != nil {
		errs = append(errs, err)
	}
	if c.PodManifestPath != "" && (!filepath.IsAbs(c.PodManifestPath) || c.FileCheckFrequency <= 0) {
		errs = append(errs, fmt.Errorf("static pods need an absolute --pod-manifest-path (%q) and a positive --file-check-frequency (%s)", c.PodManifestPath, c.FileCheckFrequency))
	}
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil || q.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("--container-log-max-size %q is not a positive quantity such as 10Mi", c.ContainerLogMaxSize))
	}
	if c.ContainerLogMaxFiles < 2 {
		errs = append(errs, fmt.Errorf("--container-log-max-files %d must be at least 2 (the current file and one rotated)", c.ContainerLogMaxFiles))
	}
	for flag, m := range map[string]map[string]string{"system-reserved": c.SystemReserved, "kube-reserved": c.KubeReserved} {
		if _, err := nodestatus.ParseReserved(flag, m); err != nil {
			errs = append(errs, err)
		}
	}
	if c.NodeCgroup != "" && !filepath.IsAbs(c.NodeCgroup) {
		errs = append(errs, fmt.Errorf("node cgroup (--node-cgroup) %q must be an absolute path", c.NodeCgroup))
	}
	if !filepath.IsAbs(c.CgroupRoot) {
		errs = append(errs, fmt.Errorf("cgroup root (--cgroup-root) %q must be an absolute path", c.CgroupRoot))
	}
	switch {
	case c.RotateServerCertificates && (c.TLSCertFile != "" || c.TLSPrivateKeyFile != ""):
		errs = append(errs, errors.New("--rotate-server-certificates requests the node API's certificate itself: drop --tls-cert-file and --tls-private-key-file"))
	case c.RotateServerCertificates && c.ClientCAFile == "":
		errs = append(errs, errors.New("the node API needs --client-ca-file"))
	case !c.RotateServerCertificates && (c.TLSCertFile != "" || c.TLSPrivateKeyFile != "" || c.ClientCAFile != "") &&
		(c.TLSCertFile == "" || c.TLSPrivateKeyFile == "" || c.ClientCAFile == ""):
		errs = append(errs, errors.New("the node API needs all of --tls-cert-file, --tls-private-key-file and --client-ca-file"))
	}
	errs = append(errs, c.validateDNS())
	return errors.Join(errs...)
}

// ServesNodeAPI: the node API has a certificate, from files or from CSRs.
func (c Config) ServesNodeAPI() bool { return c.TLSCertFile != "" || c.RotateServerCertificates }

// The layout below RootDir (docs/contracts.md).
func (c Config) netnsDir() string        { return filepath.Join(c.RootDir, "netns") }
func (c Config) logsDir() string         { return filepath.Join(c.RootDir, "logs") }
func (c Config) PodsDir() string         { return filepath.Join(c.RootDir, "pods") }
func (c Config) fifoDir() string         { return filepath.Join(c.RootDir, "fifo") }
func (c Config) ImageVolumesDir() string { return filepath.Join(c.RootDir, "image-volumes") }
func (c Config) seccompDir() string      { return filepath.Join(c.RootDir, "seccomp") }
func (c Config) CNICacheDir() string     { return filepath.Join(c.RootDir, "cni", "cache") }
func (c Config) CNINetworksDir() string  { return filepath.Join(c.RootDir, "cni", "networks") }

// CNINetConfDir is where the conflist is written (auto) or read (file).
func (c Config) CNINetConfDir() string {
	if c.CNIConfDir != "" {
		return c.CNIConfDir
	}
	return filepath.Join(c.RootDir, "cni", "net.d")
}

// LogConfig is how the runtime logs containers' output.
func (c Config) LogConfig() runtime.LogConfig {
	size := resource.MustParse(c.ContainerLogMaxSize) // checked by Validate
	return runtime.LogConfig{FIFODir: c.fifoDir(), MaxSize: size.Value(), MaxFiles: c.ContainerLogMaxFiles}
}

func (c Config) validateDNS() error {
	var errs []error
	for _, s := range c.ClusterDNS {
		if net.ParseIP(s) == nil {
			errs = append(errs, fmt.Errorf("cluster DNS (--cluster-dns) %q is not an IP address", s))
		}
	}
	if c.ClusterDomain != "" {
		for _, msg := range validation.IsDNS1123Subdomain(c.ClusterDomain) {
			errs = append(errs, fmt.Errorf("cluster domain (--cluster-domain) %q: %s", c.ClusterDomain, msg))
		}
	}
	if c.ResolvConf != "" && !filepath.IsAbs(c.ResolvConf) {
		errs = append(errs, fmt.Errorf("--resolv-conf %q must be an absolute path (or \"\" for none)", c.ResolvConf))
	}
	return errors.Join(errs...)
}

// dnsConfigurer is the node's DNS settings; Validate has checked them.
func (c Config) dnsConfigurer() *dns.Configurer {
	d := &dns.Configurer{ClusterDomain: c.ClusterDomain, ResolvConf: c.ResolvConf}
	for _, s := range c.ClusterDNS {
		d.ClusterDNS = append(d.ClusterDNS, net.ParseIP(s))
	}
	return d
}
