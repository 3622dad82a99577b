package podsync

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// nodeHostsFile is what a hostNetwork pod's /etc/hosts starts from.
const nodeHostsFile = "/etc/hosts"

// The pod's resolv.conf and hosts file live in its directory (removed with the pod).
func (s *Syncer) podResolvConf(pod *corev1.Pod) string {
	return filepath.Join(s.cfg.PodsDir, string(pod.UID), "resolv.conf")
}

func (s *Syncer) podHostsFile(pod *corev1.Pod) string {
	return filepath.Join(s.cfg.PodsDir, string(pod.UID), "etc-hosts")
}

// writePodDNSFiles writes the pod's resolv.conf (by its dnsPolicy and dnsConfig) and
// /etc/hosts (its address podIP under its hostname, and its hostAliases), as the kubelet
// and the CRI runtime do for each new sandbox: once, before its first container.
func (s *Syncer) writePodDNSFiles(pod *corev1.Pod, podIP net.IP) error {
	d := s.cfg.DNS
	cfg, events, err := d.PodDNS(pod)
	if err != nil {
		return err
	}
	for _, e := range events {
		s.podEvent(pod, corev1.EventTypeWarning, e.Reason, "%s", e.Message)
	}
	hosts, err := d.HostsFile(pod, podHostname(pod), []string{podIP.String()}, nodeHostsFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.podResolvConf(pod)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(s.podResolvConf(pod), cfg.ResolvConf(), 0o644); err != nil {
		return fmt.Errorf("pod resolv.conf: %w", err)
	}
	if err := os.WriteFile(s.podHostsFile(pod), hosts, 0o644); err != nil {
		return fmt.Errorf("pod hosts file: %w", err)
	}
	return nil
}

// podDNSMounts adds the pod's /etc/resolv.conf and /etc/hosts to a container's mounts,
// unless the container mounts something there itself; the sandbox's first container
// writes them.
func (s *Syncer) podDNSMounts(pod *corev1.Pod, podIP net.IP, mounts []runtime.Mount) ([]runtime.Mount, error) {
	if _, err := os.Stat(s.podHostsFile(pod)); errors.Is(err, os.ErrNotExist) {
		if err := s.writePodDNSFiles(pod, podIP); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct{ host, container string }{
		{s.podResolvConf(pod), "/etc/resolv.conf"},
		{s.podHostsFile(pod), "/etc/hosts"},
	} {
		if !mountsAt(mounts, f.container) {
			mounts = append(mounts, runtime.Mount{HostPath: f.host, ContainerPath: f.container})
		}
	}
	return mounts, nil
}

func mountsAt(mounts []runtime.Mount, path string) bool {
	for _, m := range mounts {
		if filepath.Clean(m.ContainerPath) == path {
			return true
		}
	}
	return false
}

// removePodDNSFiles makes the pod's next container write them afresh.
func (s *Syncer) removePodDNSFiles(pod *corev1.Pod) error {
	for _, f := range []string{s.podResolvConf(pod), s.podHostsFile(pod)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pod DNS files: %w", err)
		}
	}
	return nil
}
