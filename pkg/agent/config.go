package agent

import (
	"errors"

	"fmt"
	"github.com/minik8s/minik8s/pkg/agent/nodeapi"
	"net"
	"path/filepath"
)

// Config is everything minilet's flags decide.
type Config struct {
	NodeName            string // --node-name
	NodeIP              string // --node-ip: InternalIP of the node and hostIP of its pods
	PodCIDR             string // --pod-cidr: the node's spec.podCIDR, the range CNI hands out ("": the one miniapi assigns)
	RootDir             string // --root-dir: everything minilet makes on disk lives below it
	ContainerdAddress   string // --containerd
	ContainerdNamespace string // --containerd-namespace
	CNIBinDir           string // --cni-bin-dir
	CNIBridge           string // --cni-bridge
	PodManifestPath     string // --pod-manifest-path (static pods; not read yet)
	HealthzAddr         string // host:port of /healthz and /metrics; empty serves nothing
	// NodeAPI is the kubelet-style HTTPS API (--port, --tls-cert-file, ...) the API server
	// calls for `kubectl logs`; no certificate serves nothing.
	NodeAPI nodeapi.Config
	Port    int // --port: where NodeAPI listens on NodeIP, reported as daemonEndpoints
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
	if c.NodeAPI.CertFile != "" && (c.Port < 1 || c.Port > 65535) {
		errs = append(errs, fmt.Errorf("node API port (--port) %d is not between 1 and 65535", c.Port))
	}
	if (c.NodeAPI.CertFile == "") != (c.NodeAPI.KeyFile == "") || (c.NodeAPI.CertFile != "" && c.NodeAPI.ClientCAFile == "") {
		errs = append(errs, errors.New("the node API needs --tls-cert-file, --tls-private-key-file and --client-ca-file together"))
	}
	return errors.Join(errs...)
}

// The layout below RootDir (docs/contracts.md).
func (c Config) netnsDir() string       { return filepath.Join(c.RootDir, "netns") }
func (c Config) logsDir() string        { return filepath.Join(c.RootDir, "logs") }
func (c Config) cniCacheDir() string    { return filepath.Join(c.RootDir, "cni", "cache") }
func (c Config) cniNetworksDir() string { return filepath.Join(c.RootDir, "cni", "networks") }
