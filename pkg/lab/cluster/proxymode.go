package cluster

import (
	"fmt"
	"os"
	"os/exec"
)

// Proxy modes of the lab's miniproxy (--proxy-mode).
const (
	ProxyIPTables = "iptables"
	ProxyIPVS     = "ipvs"
)

// checkProxyMode says, before a lab is made, whether this kernel can run mode: IPVS needs
// the ip_vs module (loaded, or loadable by modprobe).
func checkProxyMode(mode string) error {
	switch mode {
	case "", ProxyIPTables:
		return nil
	case ProxyIPVS:
		if hasIPVS() {
			return nil
		}
		_ = exec.Command("modprobe", "-q", "ip_vs").Run()
		if hasIPVS() {
			return nil
		}
		return fmt.Errorf("--proxy-mode ipvs: this kernel has no IP_VS (module ip_vs is neither loaded nor loadable; /proc/net/ip_vs is missing); use --proxy-mode iptables, or a kernel with ip_vs (docs/labs/clusterip-walk-ipvs.md runs one in a VM)")
	default:
		return fmt.Errorf("--proxy-mode %q: want %s or %s", mode, ProxyIPTables, ProxyIPVS)
	}
}

func hasIPVS() bool {
	_, err := os.Stat("/proc/net/ip_vs")
	return err == nil
}
