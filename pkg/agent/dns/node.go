package dns

import (
	"fmt"
	"io"
	"net"
	"os"
)

// systemd-resolved's files: /etc/resolv.conf usually names only its stub listener, which
// answers on the host's loopback; the file it keeps in /run names the upstream servers.
const (
	HostResolvConf      = "/etc/resolv.conf"
	SystemdResolvConf   = "/run/systemd/resolve/resolv.conf"
	systemdResolvedStub = "127.0.0.53"
)

// NodeResolvConf is the resolver configuration pods are based on, given minilet's
// --resolv-conf. kubeadm sets the kubelet's resolvConf to systemd-resolved's
// /run/systemd/resolve/resolv.conf when that service is active, because a pod cannot reach
// the stub 127.0.0.53 on the host's loopback (and CoreDNS, forwarding to it, would query
// itself on its own loopback: a loop). minilet makes the same choice for the default
// /etc/resolv.conf when it names only the stub and systemd-resolved's file exists; reason
// says why, "" when path stays. A file it cannot read stays too: each pod then fails with
// the reason, as the kubelet's pods do.
func NodeResolvConf(path, systemdPath string) (chosen, reason string) {
	return chooseResolvConf(path, path, systemdPath)
}

// chooseResolvConf reads the flag's file from file (a test's stand-in for /etc/resolv.conf).
func chooseResolvConf(path, file, systemdPath string) (chosen, reason string) {
	if path != HostResolvConf {
		return path, ""
	}
	cfg, err := readResolvConf(file)
	if err != nil || len(cfg.Nameservers) == 0 {
		return path, ""
	}
	for _, ns := range cfg.Nameservers {
		if ns != systemdResolvedStub {
			return path, ""
		}
	}
	if _, err := os.Stat(systemdPath); err != nil {
		return path, ""
	}
	return systemdPath, fmt.Sprintf("%s names only systemd-resolved's stub %s, which pods cannot reach", path, systemdResolvedStub)
}

func readResolvConf(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("node resolver configuration (--resolv-conf): %w", err)
	}
	defer f.Close()
	cfg, err := ParseResolvConf(io.LimitReader(f, maxResolvConfBytes))
	if err != nil {
		return Config{}, fmt.Errorf("node resolver configuration %s: %w", path, err)
	}
	return cfg, nil
}

// withoutLoopback drops the nameservers on a loopback address: a pod in a network
// namespace of its own has a loopback of its own, where the node's resolver is not.
func withoutLoopback(nameservers []string) (kept, dropped []string) {
	for _, ns := range nameservers {
		if ip := net.ParseIP(ns); ip != nil && ip.IsLoopback() {
			dropped = append(dropped, ns)
			continue
		}
		kept = append(kept, ns)
	}
	return kept, dropped
}
