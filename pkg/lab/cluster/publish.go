package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/forward"
	"k8s.io/client-go/tools/clientcmd"
)

// APIPublication is the forwarder process of the API server's host port.
const APIPublication = "publish-api"

// ParsePublish reads a --publish value, [HOSTIP:]HOSTPORT:TARGET:PORT as kind's
// extraPortMappings say it: TARGET is a node name (node-1) or a lab address (a
// LoadBalancer IP, say), dialed from the lab's client namespace, a machine on the lab
// segment that is no node. HOSTIP defaults to 127.0.0.1 and must be a loopback address.
func ParsePublish(l *lab.Lab, spec string) (lab.Publication, error) {
	parts := strings.Split(spec, ":")
	if len(parts) == 3 {
		parts = append([]string{"127.0.0.1"}, parts...)
	}
	if len(parts) != 4 {
		return lab.Publication{}, fmt.Errorf("--publish %q: want [HOSTIP:]HOSTPORT:NODE:PORT, as 127.0.0.1:8080:node-1:30080", spec)
	}
	for _, port := range []string{parts[1], parts[3]} {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return lab.Publication{}, fmt.Errorf("--publish %q: port %q is not a number from 1 to 65535", spec, port)
		}
	}
	listen := net.JoinHostPort(parts[0], parts[1])
	if err := forward.CheckLoopback(listen); err != nil {
		return lab.Publication{}, fmt.Errorf("--publish %q: %w", spec, err)
	}
	target := parts[2]
	if i := slices.IndexFunc(l.Nodes, func(n lab.Node) bool { return n.Name == target }); i >= 0 {
		target = l.Nodes[i].IP
	} else if ip := net.ParseIP(target); ip == nil || ip.To4() == nil {
		return lab.Publication{}, fmt.Errorf("--publish %q: %q is neither a node of lab %q nor an IPv4 address", spec, target, l.Name)
	}
	if l.Client == nil {
		return lab.Publication{}, fmt.Errorf("lab %q has no client namespace to publish from (made by an older minilab)", l.Name)
	}
	return lab.Publication{Listen: listen, NetNS: l.Client.NetNS, Target: net.JoinHostPort(target, parts[3]),
		Process: "publish-" + strings.ReplaceAll(listen, ":", "-")}, nil
}

// Publish starts a forwarder (minilab forward, from binDir) for p in the host namespace,
// waits until it listens and records it in the lab.
func Publish(ctx context.Context, l *lab.Lab, binDir string, p lab.Publication) error {
	if slices.ContainsFunc(l.Published, func(q lab.Publication) bool { return q.Listen == p.Listen }) {
		return fmt.Errorf("%s is already published by lab %q", p.Listen, l.Name)
	}
	if ln, err := net.Listen("tcp", p.Listen); err != nil {
		return fmt.Errorf("publish %s: the host port is taken: %w", p.Listen, err)
	} else {
		ln.Close()
	}
	if _, err := l.Start(lab.Process{Name: p.Process, Args: []string{
		filepath.Join(binDir, "minilab"), "forward", "--listen", p.Listen, "--netns", p.NetNS, "--to", p.Target,
	}}); err != nil {
		return err
	}
	if err := waitFor(ctx, "the forwarder on "+p.Listen, func() bool {
		c, err := net.DialTimeout("tcp", p.Listen, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return err
	}
	l.Published = append(l.Published, p)
	return l.Save()
}

// publishAPI publishes the API server on a free host loopback port and writes the host
// kubeconfig, the admin's credentials pointed at that port (the serving certificate names
// 127.0.0.1).
func publishAPI(ctx context.Context, l *lab.Lab, binDir string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("find a free loopback port for the API: %w", err)
	}
	listen := ln.Addr().String()
	ln.Close()
	if err := Publish(ctx, l, binDir, lab.Publication{Listen: listen, NetNS: l.ControlPlane.NetNS,
		Target: net.JoinHostPort(l.ControlPlane.IP, strconv.Itoa(APIPort)), Process: APIPublication}); err != nil {
		return err
	}
	cfg, err := clientcmd.LoadFromFile(l.Kubeconfig)
	if err != nil {
		return fmt.Errorf("read the lab kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + listen
	}
	l.HostKubeconfig = filepath.Join(l.StateDir, "host.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, l.HostKubeconfig); err != nil {
		return fmt.Errorf("write the host kubeconfig: %w", err)
	}
	if err := os.Chmod(l.HostKubeconfig, 0o600); err != nil {
		return err
	}
	return l.Save()
}
