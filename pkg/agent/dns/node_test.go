package dns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNodeResolvConf: kubeadm's choice for systemd-resolved hosts, made from the files.
func TestNodeResolvConf(t *testing.T) {
	dir := t.TempDir()
	systemd := writeFile(t, filepath.Join(dir, "systemd-resolv.conf"), "nameserver 192.0.2.53\n")
	missing := filepath.Join(dir, "none")
	for name, tc := range map[string]struct {
		host, systemdPath, want string
	}{
		"only the stub, systemd-resolved's file there": {"nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n", systemd, systemd},
		"only the stub, no systemd-resolved file":      {"nameserver 127.0.0.53\n", missing, HostResolvConf},
		"a real server beside the stub":                {"nameserver 127.0.0.53\nnameserver 192.0.2.1\n", systemd, HostResolvConf},
		"no nameserver":                                {"search example.org\n", systemd, HostResolvConf},
	} {
		t.Run(name, func(t *testing.T) {
			host := writeFile(t, filepath.Join(t.TempDir(), "resolv.conf"), tc.host)
			got, reason := chooseResolvConf(HostResolvConf, host, tc.systemdPath)
			if got != tc.want || (got == systemd) != strings.Contains(reason, "127.0.0.53") {
				t.Errorf("chose %s (%q), want %s", got, reason, tc.want)
			}
		})
	}
	// A path the user chose is kept, whatever it holds.
	own := writeFile(t, filepath.Join(dir, "own.conf"), "nameserver 127.0.0.53\n")
	if got, _ := NodeResolvConf(own, systemd); got != own {
		t.Errorf("--resolv-conf %s became %s", own, got)
	}
	// An unreadable one stays, so each pod fails saying why.
	if got, _ := chooseResolvConf(HostResolvConf, missing, systemd); got != HostResolvConf {
		t.Errorf("a missing /etc/resolv.conf became %s", got)
	}
}

// TestLoopbackNameserversNotHandedToPods: a Default pod in its own network namespace gets
// none of the node's loopback nameservers (they are not there), with a Warning; a
// hostNetwork pod shares the node's loopback and gets them.
func TestLoopbackNameserversNotHandedToPods(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "resolv.conf"), "nameserver 127.0.0.53\nnameserver 192.0.2.53\nnameserver ::1\nsearch corp.example\n")
	c := &Configurer{ClusterDomain: "cluster.local", ResolvConf: path}
	cfg, events, err := c.PodDNS(pod(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(cfg.ResolvConf()), "search corp.example\nnameserver 192.0.2.53\n"; got != want {
		t.Errorf("resolv.conf %q, want %q", got, want)
	}
	if len(events) != 1 || events[0].Reason != ReasonDNSConfigForming || !strings.Contains(events[0].Message, "127.0.0.53 ::1; the applied nameserver line is: 192.0.2.53") {
		t.Errorf("events %v, want one DNSConfigForming naming 127.0.0.53 and ::1", events)
	}
	cfg, events, err = c.PodDNS(pod(func(p *corev1.Pod) { p.Spec.DNSPolicy, p.Spec.HostNetwork = corev1.DNSDefault, true }))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Nameservers, " "); got != "127.0.0.53 192.0.2.53 ::1" || len(events) != 0 {
		t.Errorf("hostNetwork pod: nameservers %q events %v, want the node's three and no event", got, events)
	}
	// A pod's own dnsConfig may name its loopback (a resolver in a sidecar).
	cfg, _, err = c.PodDNS(pod(func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSNone
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"127.0.0.1"}}
	}))
	if err != nil || strings.Join(cfg.Nameservers, " ") != "127.0.0.1" {
		t.Errorf("dnsConfig's own loopback nameserver: %v (%v)", cfg.Nameservers, err)
	}
}
