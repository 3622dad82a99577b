package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// nodeHostsFile is what a hostNetwork pod's /etc/hosts starts from.
const nodeHostsFile = "/etc/hosts"

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

// The pod's resolv.conf and hosts file live in its directory (removed with the pod).
func (a *Agent) podResolvConf(pod *corev1.Pod) string {
	return filepath.Join(a.cfg.PodsDir(), string(pod.UID), "resolv.conf")
}

func (a *Agent) podHostsFile(pod *corev1.Pod) string {
	return filepath.Join(a.cfg.PodsDir(), string(pod.UID), "etc-hosts")
}

// writePodDNSFiles writes the pod's resolv.conf (by its dnsPolicy and dnsConfig) and
// /etc/hosts (its address podIP under its hostname, and its hostAliases), as the kubelet
// and the CRI runtime do for each new sandbox: once, before its first container.
func (a *Agent) writePodDNSFiles(pod *corev1.Pod, podIP net.IP) error {
	d := a.cfg.dnsConfigurer()
	cfg, events, err := d.PodDNS(pod)
	if err != nil {
		return err
	}
	for _, e := range events {
		a.podEvent(pod, corev1.EventTypeWarning, e.Reason, "%s", e.Message)
	}
	hosts, err := d.HostsFile(pod, podHostname(pod), []string{podIP.String()}, nodeHostsFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(a.podResolvConf(pod)), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(a.podResolvConf(pod), cfg.ResolvConf(), 0o644); err != nil {
		return fmt.Errorf("pod resolv.conf: %w", err)
	}
	if err := os.WriteFile(a.podHostsFile(pod), hosts, 0o644); err != nil {
		return fmt.Errorf("pod hosts file: %w", err)
	}
	return nil
}

// podDNSMounts adds the pod's /etc/resolv.conf and /etc/hosts to a container's mounts,
// unless the container mounts something there itself; the sandbox's first container
// writes them.
func (a *Agent) podDNSMounts(pod *corev1.Pod, podIP net.IP, mounts []runtime.Mount) ([]runtime.Mount, error) {
	if _, err := os.Stat(a.podHostsFile(pod)); errors.Is(err, os.ErrNotExist) {
		if err := a.writePodDNSFiles(pod, podIP); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct{ host, container string }{
		{a.podResolvConf(pod), "/etc/resolv.conf"},
		{a.podHostsFile(pod), "/etc/hosts"},
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
func (a *Agent) removePodDNSFiles(pod *corev1.Pod) error {
	for _, f := range []string{a.podResolvConf(pod), a.podHostsFile(pod)} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pod DNS files: %w", err)
		}
	}
	return nil
}
