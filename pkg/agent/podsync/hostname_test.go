package podsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
)

// TestPodHostname: the pod's hostname, as the sandbox's (its UTS namespace), in
// /etc/hostname and in the /etc/hosts line of its address, is the kubelet's
// GeneratePodHostNameAndDomain: spec.hostnameOverride over spec.hostname over the pod's
// name, cut to 63 characters without a trailing '.' or '-'; an overridden hostname has no
// domain, so no fully qualified name even with a subdomain.
func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + ".b"
	for name, tc := range map[string]struct {
		spec                func(*corev1.PodSpec)
		hostname, hostsLine string // hostsLine follows the pod's address
	}{
		"the pod's name": {spec: func(*corev1.PodSpec) {}, hostname: "web", hostsLine: "web"},
		"hostname and subdomain": {spec: func(s *corev1.PodSpec) { s.Hostname, s.Subdomain = "h", "sub" },
			hostname: "h", hostsLine: "h.sub.default.svc.cluster.local\th"},
		"hostname and subdomain as FQDN": {spec: func(s *corev1.PodSpec) {
			s.Hostname, s.Subdomain, s.SetHostnameAsFQDN = "h", "sub", ptr.To(true)
		}, hostname: "h.sub.default.svc.cluster.local", hostsLine: "h.sub.default.svc.cluster.local\th"},
		"override": {spec: func(s *corev1.PodSpec) {
			s.Hostname, s.Subdomain, s.HostnameOverride = "h", "sub", ptr.To("my.host-1")
		}, hostname: "my.host-1", hostsLine: "my.host-1"},
		"override of 64 characters": {spec: func(s *corev1.PodSpec) { s.HostnameOverride = &long },
			hostname: long[:62], hostsLine: long[:62]},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.syncer.cfg.DNS.ClusterDomain = "cluster.local"
			pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
			tc.spec(&pod.Spec)
			pod, _ = h.start(pod)
			if cfg := h.Runtime.SandboxConfigs[0]; cfg.Hostname != tc.hostname {
				t.Errorf("sandbox hostname %q, want %q", cfg.Hostname, tc.hostname)
			}
			dir := h.syncer.podDir(pod)
			if b, err := os.ReadFile(filepath.Join(dir, "hostname")); err != nil || string(b) != tc.hostname+"\n" {
				t.Errorf("/etc/hostname %q (%v), want %q", b, err, tc.hostname+"\n")
			}
			want := "\n" + h.apiPod(pod).Status.PodIP + "\t" + tc.hostsLine + "\n"
			if b, err := os.ReadFile(filepath.Join(dir, "etc-hosts")); err != nil || !strings.HasSuffix(string(b), want) {
				t.Errorf("/etc/hosts (%v):\n%s\nwant it to end in %q", err, b, want)
			}
		})
	}
}
