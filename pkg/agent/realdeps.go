package agent

import (
	"context"
	"errors"
	"fmt"

	containerd "github.com/containerd/containerd/v2/client"
	"k8s.io/client-go/kubernetes"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// Run runs minilet's agent on containerd and the CNI plugins until ctx ends.
func Run(ctx context.Context, cfg Config, client kubernetes.Interface) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rt, err := newContainerdRuntime(ctx, cfg.ContainerdAddress, cfg.ContainerdNamespace)
	if err != nil {
		return err
	}
	defer rt.Close()
	cni, err := network.NewCNI(network.Config{
		PluginDirs:  []string{cfg.CNIBinDir},
		BridgeName:  cfg.CNIBridge,
		PodCIDR:     cfg.PodCIDR,
		CacheDir:    cfg.cniCacheDir(),
		IPAMDataDir: cfg.cniNetworksDir(),
	})
	if err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	a, err := New(cfg, client, rt, cniNetwork{cni})
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// containerdRuntime is pkg/runtime plus the daemon's version, which the
// node reports and whose answer tells whether containerd is up.
type containerdRuntime struct {
	*runtime.Runtime
	client *containerd.Client
}

func newContainerdRuntime(ctx context.Context, address, namespace string) (*containerdRuntime, error) {
	rt, err := runtime.New(ctx, address, namespace)
	if err != nil {
		return nil, err
	}
	client, err := containerd.New(address, containerd.WithTimeout(runtimeTimeout))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("containerd at %s: %w", address, err), rt.Close())
	}
	return &containerdRuntime{Runtime: rt, client: client}, nil
}

func (r *containerdRuntime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(ctx)
	if err != nil {
		return "", err
	}
	return v.Version, nil
}

func (r *containerdRuntime) Close() error {
	return errors.Join(r.client.Close(), r.Runtime.Close())
}

// cniNetwork is pkg/network's CNI plus its network namespace functions.
type cniNetwork struct{ *network.CNI }

func (cniNetwork) NewNetNS(dir, name string) (string, error) { return network.NewNetNS(dir, name) }
func (cniNetwork) RemoveNetNS(path string) error             { return network.RemoveNetNS(path) }
