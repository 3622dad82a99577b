// Package hostnetwork is where minilet's hostNetwork pods live: the node's network
// namespace (minilet's own), bound below the root directory so a pod's sandbox can join
// it by path (docs/network.md).
package hostnetwork

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// nodeNetNSName is the file in nodeNetNSDir where minilet binds its own network namespace.
const nodeNetNSName = "net"

// nodeNetNSDir holds the bind mount of minilet's network namespace, the node's, which
// hostNetwork pods join by path.
func nodeNetNSDir(rootDir string) string { return filepath.Join(rootDir, "nodens") }

// Remove removes the node namespace's bind mount minilet made below rootDir
// (`minilet network --cleanup`). The next minilet start makes it again.
func Remove(rootDir string) error {
	return network.RemoveBoundNetNS(nodeNetNSDir(rootDir), nodeNetNSName)
}

// Binder bind-mounts the caller's network namespace (the node's) at dir/name and tells
// whether it is the host's (pkg/network).
type Binder interface {
	BindNodeNetNS(dir, name string) (path string, isHost bool, err error)
}

// Node is the node's network namespace as hostNetwork pods see it.
type Node struct {
	binder  Binder
	rootDir string
	log     *slog.Logger

	// The bind mount of the node's network namespace and whether that namespace is the
	// host's; set by Bind.
	netNS  string
	isHost bool
}

// New makes a Node whose namespace Bind binds below rootDir.
func New(binder Binder, rootDir string, log *slog.Logger) *Node {
	return &Node{binder: binder, rootDir: rootDir, log: log}
}

// Bind binds minilet's network namespace where hostNetwork pods join it, again at every
// start (a reboot leaves a plain file where the mount was), before any pod is synced.
func (n *Node) Bind() error {
	path, isHost, err := n.binder.BindNodeNetNS(nodeNetNSDir(n.rootDir), nodeNetNSName)
	if err != nil {
		return fmt.Errorf("node network namespace for hostNetwork pods: %w", err)
	}
	n.netNS, n.isHost = path, isHost
	n.log.Info("hostNetwork pods join the node's network namespace", "path", path, "hostNamespace", isHost)
	return nil
}

// Join sets up cfg for a hostNetwork pod, as the kubelet's "host" is the node: the pod
// joins the node's network namespace (minilet's own; in a lab that is not the namespace
// of containerd, which a pod without a namespace path would inherit). On a node that is
// the host the pod shares the host's UTS namespace too; on a lab node it gets one of its
// own (named after the node by the caller), leaving the host's hostname alone.
func (n *Node) Join(cfg *runtime.SandboxConfig) error {
	if n.netNS == "" {
		return fmt.Errorf("the node's network namespace is not bound yet")
	}
	cfg.NetNSPath, cfg.HostNetwork = n.netNS, true
	cfg.HostUTS = n.isHost
	return nil
}

// Check tells whether a hostNetwork pod's sandbox is in the node's network namespace;
// one made by an older minilet sits in the runtime's.
func (n *Node) Check(sb runtime.Container) error {
	if !sb.HostNetwork || sb.NetNSPath != n.netNS {
		return fmt.Errorf("hostNetwork sandbox %s is not in the node's network namespace %s", sb.ID, n.netNS)
	}
	return nil
}

// HasPodNetwork tells whether sb sits in a network namespace of its pod's own, wired by
// CNI. A hostNetwork sandbox is in the node's namespace: CNI DEL there would delete the
// node's own interfaces (the bridge plugin deletes the interface it was asked for).
func (n *Node) HasPodNetwork(sb runtime.Container) bool {
	return sb.NetNSPath != "" && !sb.HostNetwork && sb.NetNSPath != n.netNS
}
