package podsync

import (
	"fmt"
	"path/filepath"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// nodeNetNSName is the file in nodeNetNSDir where minilet binds its own network namespace.
const nodeNetNSName = "net"

// nodeNetNSDir holds the bind mount of minilet's network namespace, the node's, which
// hostNetwork pods join by path (docs/network.md).
func nodeNetNSDir(rootDir string) string { return filepath.Join(rootDir, "nodens") }

// RemoveNodeNetNS removes the node namespace's bind mount minilet made below rootDir
// (`minilet network --cleanup`). The next minilet start makes it again.
func RemoveNodeNetNS(rootDir string) error {
	return network.RemoveBoundNetNS(nodeNetNSDir(rootDir), nodeNetNSName)
}

// BindNodeNetNS binds minilet's network namespace where hostNetwork pods join it, again
// at every start: a reboot leaves a plain file where the mount was.
func (s *Syncer) BindNodeNetNS() error {
	path, isHost, err := s.net.BindNodeNetNS(nodeNetNSDir(s.cfg.RootDir), nodeNetNSName)
	if err != nil {
		return fmt.Errorf("node network namespace for hostNetwork pods: %w", err)
	}
	s.nodeNetNS, s.nodeIsHost = path, isHost
	s.log.Info("hostNetwork pods join the node's network namespace", "path", path, "hostNamespace", isHost)
	return nil
}

// hostNetworkSandbox sets up cfg for a hostNetwork pod, as the kubelet's "host" is the
// node: the pod joins the node's network namespace (minilet's own; in a lab that is
// not the namespace of containerd, which a pod without a namespace path would inherit).
// On a node that is the host the pod shares the host's UTS namespace too; on a lab node
// it gets one of its own named after the node, leaving the host's hostname alone.
func (s *Syncer) hostNetworkSandbox(cfg *runtime.SandboxConfig) error {
	if s.nodeNetNS == "" {
		return fmt.Errorf("the node's network namespace is not bound yet")
	}
	cfg.NetNSPath, cfg.HostNetwork = s.nodeNetNS, true
	cfg.HostUTS = s.nodeIsHost
	cfg.Hostname = truncateHostname(s.cfg.NodeName)
	return nil
}

// checkHostNetwork tells whether a hostNetwork pod's sandbox is in the node's network
// namespace; one made by an older minilet sits in the runtime's.
func (s *Syncer) checkHostNetwork(sb runtime.Container) error {
	if !sb.HostNetwork || sb.NetNSPath != s.nodeNetNS {
		return fmt.Errorf("hostNetwork sandbox %s is not in the node's network namespace %s", sb.ID, s.nodeNetNS)
	}
	return nil
}

// hasPodNetwork tells whether sb sits in a network namespace of its pod's own, wired by
// CNI. A hostNetwork sandbox is in the node's namespace: CNI DEL there would delete the
// node's own interfaces (the bridge plugin deletes the interface it was asked for).
func (s *Syncer) hasPodNetwork(sb runtime.Container) bool {
	return sb.NetNSPath != "" && !sb.HostNetwork && sb.NetNSPath != s.nodeNetNS
}
