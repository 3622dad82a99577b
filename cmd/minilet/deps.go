package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"

	"github.com/minik8s/minik8s/pkg/agent"
	"github.com/minik8s/minik8s/pkg/agent/certificate"
	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/nodenet"
	"github.com/minik8s/minik8s/pkg/network/policy"
	"github.com/minik8s/minik8s/pkg/nodeapi"
	"github.com/minik8s/minik8s/pkg/runtime"
	"github.com/minik8s/minik8s/pkg/stats"
)

// run runs minilet on containerd and the CNI plugins until ctx ends: it builds the agent's
// Dependencies (the one place that knows them real), the node's pod network, the stats
// collector and the node API, and returns once all it started have stopped. Events go
// through eventClient (a rate limit of their own, as the kubelet's), all else through client.
func run(ctx context.Context, cfg agent.Config, client, eventClient kubernetes.Interface, adminPolicies anpclient.Interface, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.PodCIDR == "" {
		cidr, err := agent.AwaitPodCIDR(ctx, client, cfg.NodeName, log)
		if err != nil {
			return err
		}
		cfg.PodCIDR = cidr
	}
	rt, err := connectRuntime(ctx, cfg, runtimeStartWait, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	rt.SetLogConfig(cfg.LogConfig())
	rt.SetImageVolumeDir(cfg.ImageVolumesDir())
	if err := rt.AttachLogs(ctx); err != nil { // the output of containers a former minilet started
		return err
	}
	nodeNet, cni, err := setUpNodeNetwork(cfg, log)
	if err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	rec, stopEvents := agent.NewEventRecorder(eventClient, cfg.NodeName)
	defer stopEvents()
	collector, err := stats.New(stats.Config{NodeName: cfg.NodeName, RootDir: cfg.RootDir, PodsDir: cfg.PodsDir(), CgroupRoot: cfg.CgroupRoot, NodeCgroup: cfg.NodeCgroup}, rt)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	a, err := agent.New(cfg, agent.Dependencies{Client: client, Recorder: rec, Runtime: rt, Network: cniNetwork{cni}, Stats: collector, Log: log})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { nodeNet.Run(ctx, client, rec) })
	wg.Go(func() { collector.Run(ctx) })
	if cfg.NetworkPolicy {
		wg.Go(func() { runNetworkPolicy(ctx, client, adminPolicies, cfg.NodeName, log) })
	} else if err := policy.Cleanup(ctx); err != nil {
		// An earlier run's chains would keep the pods isolated with nobody keeping them true.
		log.Warn("removing an earlier run's network policy rules", "err", err)
	}
	if cfg.ServesNodeAPI() {
		apiCfg := nodeapi.Config{NodeName: cfg.NodeName, Addr: net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.Port)),
			CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSPrivateKeyFile, ClientCAFile: cfg.ClientCAFile, Machine: nodestatus.Machine,
			Configz: func() any { return cfg.KubeletConfiguration() }}
		if cfg.RotateServerCertificates {
			m, err := certificate.Serving(ctx, client, cfg.CertDir, cfg.NodeName, cfg.NodeIP)
			if err != nil {
				return err
			}
			apiCfg.GetCertificate = certificate.GetCertificate(m)
		}
		api := nodeapi.New(apiCfg, rt, client, a.Healthy, collector, a.MetricsHandler())
		if err := api.ListenAndServe(ctx); err != nil {
			return err
		}
	}
	return a.Run(ctx)
}

// setUpNodeNetwork prepares the CNI network of the node's pods (every plugin present), then
// the node's side of the pod network (what could clash with the bridge, forwarding, the
// overlay device), so a missing plugin stops minilet before it changes the node.
func setUpNodeNetwork(cfg agent.Config, log *slog.Logger) (*nodenet.Node, *network.CNI, error) {
	_, podCIDR, _ := net.ParseCIDR(cfg.PodCIDR) // checked by Validate and node IPAM
	nodeIP := net.ParseIP(cfg.NodeIP)
	mode := cmp.Or(cfg.PodNetwork, nodenet.ModeHostGW)
	mtu, err := nodenet.PodMTU(mode, nodeIP)
	if err != nil {
		return nil, nil, err
	}
	cni, err := network.NewCNI(network.Config{
		Source:      cfg.CNIConfig,
		ConfDir:     cfg.CNINetConfDir(),
		PluginDirs:  []string{cfg.CNIBinDir},
		BridgeName:  cfg.CNIBridge,
		PodCIDR:     cfg.PodCIDR,
		CacheDir:    cfg.CNICacheDir(),
		IPAMDataDir: cfg.CNINetworksDir(),
		MTU:         mtu,
	})
	if err != nil {
		return nil, nil, err
	}
	bridge := cfg.CNIBridge
	if cfg.CNIConfig == network.ConfigFile {
		bridge = "" // the operator's network may not use it at all
	}
	nodeNet, err := nodenet.Prepare(nodenet.Config{NodeName: cfg.NodeName, NodeIP: nodeIP, PodCIDR: podCIDR, Mode: mode, Bridge: bridge})
	if err != nil {
		return nil, nil, err
	}
	log.Info("pod network", "mode", mode, "podCIDR", cfg.PodCIDR, "cniConfig", cni.ConfPath(), "mtu", mtu)
	if cni.Ready() != nil {
		log.Warn("no CNI configuration yet: the node stays NotReady and runs only hostNetwork pods until one is written", "dir", cfg.CNINetConfDir())
	}
	return nodeNet, cni, nil
}

// runtimeStartWait is how long minilet waits at start for containerd: on a booting host the
// two start together, and a socket that never answers is a wrong flag or a dead runtime.
const runtimeStartWait = time.Minute

// connectRuntime connects to containerd, retrying for up to wait while it starts.
func connectRuntime(ctx context.Context, cfg agent.Config, wait time.Duration, log *slog.Logger) (*runtime.Runtime, error) {
	deadline := time.Now().Add(wait)
	for delay := 250 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		rt, err := runtime.New(ctx, cfg.ContainerdAddress, cfg.ContainerdNamespace)
		if err == nil || time.Now().Add(delay).After(deadline) {
			return rt, err
		}
		log.Warn("waiting for containerd", "address", cfg.ContainerdAddress, "err", err, "giveUpIn", time.Until(deadline).Round(time.Second))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// cniNetwork is pkg/network's CNI plus its network namespace functions: the agent's Network.
type cniNetwork struct{ *network.CNI }

func (cniNetwork) NewNetNS(dir, name string) (string, error) { return network.NewNetNS(dir, name) }
func (cniNetwork) RemoveNetNS(path string) error             { return network.RemoveNetNS(path) }
func (cniNetwork) BindNodeNetNS(dir, name string) (string, bool, error) {
	return network.BindCurrentNetNS(dir, name)
}
