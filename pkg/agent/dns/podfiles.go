package dns

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

// The pod's resolv.conf, hosts and hostname files live in its directory (removed with the pod).
func podResolvConf(podDir string) string { return filepath.Join(podDir, "resolv.conf") }
func podHostsFile(podDir string) string  { return filepath.Join(podDir, "etc-hosts") }
func podHostname(podDir string) string   { return filepath.Join(podDir, "hostname") }

// PodMounts adds the pod's /etc/resolv.conf, /etc/hosts and /etc/hostname, kept in podDir,
// to a container's mounts, unless the container mounts something there itself. The
// sandbox's first container writes them (its resolv.conf by the pod's dnsPolicy and
// dnsConfig, its hosts file with podIP under hostname and the pod's hostAliases, its
// hostname file with the sandbox's kernelHostname), as the kubelet and the CRI runtime do
// for each new sandbox; events are the warnings of writing them.
func (c *Configurer) PodMounts(podDir string, pod *corev1.Pod, hostname, kernelHostname string, podIP net.IP, mounts []runtime.Mount) ([]runtime.Mount, []Event, error) {
	var events []Event
	if _, err := os.Stat(podHostname(podDir)); errors.Is(err, os.ErrNotExist) {
		if events, err = c.writePodFiles(podDir, pod, hostname, kernelHostname, podIP); err != nil {
			return nil, events, err
		}
	}
	for _, f := range []struct{ host, container string }{
		{podResolvConf(podDir), "/etc/resolv.conf"},
		{podHostsFile(podDir), "/etc/hosts"},
		{podHostname(podDir), "/etc/hostname"},
	} {
		if !mountsAt(mounts, f.container) {
			mounts = append(mounts, runtime.Mount{HostPath: f.host, ContainerPath: f.container})
		}
	}
	return mounts, events, nil
}

func (c *Configurer) writePodFiles(podDir string, pod *corev1.Pod, hostname, kernelHostname string, podIP net.IP) ([]Event, error) {
	cfg, events, err := c.PodDNS(pod)
	if err != nil {
		return nil, err
	}
	hosts, err := c.HostsFile(pod, hostname, []string{podIP.String()}, nodeHostsFile)
	if err != nil {
		return events, err
	}
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return events, err
	}
	if err := os.WriteFile(podResolvConf(podDir), cfg.ResolvConf(), 0o644); err != nil {
		return events, fmt.Errorf("pod resolv.conf: %w", err)
	}
	if err := os.WriteFile(podHostsFile(podDir), hosts, 0o644); err != nil {
		return events, fmt.Errorf("pod hosts file: %w", err)
	}
	// Written last: the others exist once it does.
	if err := os.WriteFile(podHostname(podDir), []byte(kernelHostname+"\n"), 0o644); err != nil {
		return events, fmt.Errorf("pod hostname file: %w", err)
	}
	return events, nil
}

func mountsAt(mounts []runtime.Mount, path string) bool {
	for _, m := range mounts {
		if filepath.Clean(m.ContainerPath) == path {
			return true
		}
	}
	return false
}

// RemovePodFiles removes the pod's resolv.conf, hosts and hostname files from podDir, so
// its next container (of a new sandbox) writes them afresh.
func RemovePodFiles(podDir string) error {
	for _, f := range []string{podHostname(podDir), podResolvConf(podDir), podHostsFile(podDir)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pod DNS files: %w", err)
		}
	}
	return nil
}

// KernelHostname is the hostname of a pod's sandbox (its UTS namespace and /etc/hostname),
// as the kubelet's GetNodenameForKernel: the pod's hostname, or with setHostnameAsFQDN and
// a subdomain (and no hostnameOverride) its fully qualified name, which the kernel takes
// up to 64 characters.
func (c *Configurer) KernelHostname(pod *corev1.Pod, hostname string) (string, error) {
	sub := subdomain(pod)
	if sub == "" || pod.Spec.SetHostnameAsFQDN == nil || !*pod.Spec.SetHostnameAsFQDN {
		return hostname, nil
	}
	fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", hostname, sub, pod.Namespace, c.ClusterDomain)
	const maxLen = 64
	if len(fqdn) > maxLen {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, maxLen, len(fqdn))
	}
	return fqdn, nil
}
