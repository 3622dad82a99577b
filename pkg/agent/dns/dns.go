// Package dns composes a pod's /etc/resolv.conf and /etc/hosts the way the kubelet does
// (pkg/kubelet/network/dns and its managed hosts file): the dnsPolicy picks the base
// (cluster DNS, the node's resolv.conf, or nothing), the pod's dnsConfig is merged in, and
// the result is cut to the limits resolvers accept.
package dns

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits of a resolv.conf, as the kubelet applies them (Kubernetes' pod validation,
// ExpandedDNSConfig): more nameservers are ignored by glibc, longer search lists break
// resolvers.
const (
	MaxNameservers     = 3
	MaxSearchPaths     = 32
	MaxSearchListChars = 2048
	maxResolvConfBytes = 10 << 20
)

// The options of a ClusterFirst pod: names with fewer than five dots are tried with the
// search list first, so "web" and "web.shop" find Services.
var clusterOptions = []string{"ndots:5"}

// Event reasons, as the kubelet spells them.
const (
	ReasonDNSConfigForming  = "DNSConfigForming"
	ReasonMissingClusterDNS = "MissingClusterDNS"
)

// Event is something the caller records as a Warning event on the pod.
type Event struct{ Reason, Message string }

// Configurer is a node's DNS settings (minilet's --cluster-dns, --cluster-domain and
// --resolv-conf).
type Configurer struct {
	ClusterDNS    []net.IP
	ClusterDomain string
	// ResolvConf is the node's resolver configuration, the base of Default pods and the
	// source of extra search domains for ClusterFirst ones; "" means none.
	ResolvConf string
}

// Config is the content of a resolv.conf.
type Config struct {
	Nameservers, Searches, Options []string
}

// PodDNS is the resolver configuration of pod, with the warnings to record about it.
func (c *Configurer) PodDNS(pod *corev1.Pod) (Config, []Event, error) {
	host, err := c.hostConfig()
	if err != nil {
		return Config{}, nil, err
	}
	var events []Event
	cfg := host
	switch policyOf(pod) {
	case corev1.DNSNone:
		cfg = Config{}
	case corev1.DNSClusterFirst:
		if len(c.ClusterDNS) > 0 {
			cfg = Config{Searches: c.clusterSearches(pod.Namespace, host.Searches), Options: clusterOptions}
			for _, ip := range c.ClusterDNS {
				cfg.Nameservers = append(cfg.Nameservers, ip.String())
			}
			break
		}
		events = append(events, Event{ReasonMissingClusterDNS, fmt.Sprintf(
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", corev1.DNSClusterFirst, corev1.DNSDefault)})
		fallthrough
	case corev1.DNSDefault:
		if c.ResolvConf == "" {
			// No node resolver configured: the resolver library's own default, the local
			// machine, which in a pod answers nothing: DNS is effectively off.
			cfg = Config{Nameservers: []string{"127.0.0.1"}, Searches: []string{"."}}
			break
		}
		if !pod.Spec.HostNetwork {
			var dropped []string
			cfg.Nameservers, dropped = withoutLoopback(cfg.Nameservers)
			if len(dropped) > 0 {
				events = append(events, Event{ReasonDNSConfigForming, fmt.Sprintf(
					"Nameservers on the node's loopback were omitted (a pod has a loopback of its own): %s; the applied nameserver line is: %s",
					strings.Join(dropped, " "), strings.Join(cfg.Nameservers, " "))})
			}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Nameservers = unique(slices.Concat(cfg.Nameservers, dc.Nameservers))
		cfg.Searches = unique(slices.Concat(cfg.Searches, dc.Searches))
		cfg.Options = mergeOptions(cfg.Options, dc.Options)
	}
	var ev []Event
	cfg, ev = fitLimits(cfg)
	return cfg, append(events, ev...), nil
}

// policyOf is the pod's effective policy: ClusterFirst (also the API's default) is
// Default for a hostNetwork pod, which ClusterFirstWithHostNet overrides.
func policyOf(pod *corev1.Pod) corev1.DNSPolicy {
	switch p := pod.Spec.DNSPolicy; p {
	case corev1.DNSNone, corev1.DNSDefault:
		return p
	case corev1.DNSClusterFirstWithHostNet:
		return corev1.DNSClusterFirst
	default:
		if pod.Spec.HostNetwork {
			return corev1.DNSDefault
		}
		return corev1.DNSClusterFirst
	}
}

// clusterSearches are the cluster's domains, most specific first, then the node's.
func (c *Configurer) clusterSearches(namespace string, host []string) []string {
	if c.ClusterDomain == "" {
		return host
	}
	d := c.ClusterDomain
	return unique(slices.Concat([]string{namespace + ".svc." + d, "svc." + d, d}, host))
}

func (c *Configurer) hostConfig() (Config, error) {
	if c.ResolvConf == "" {
		return Config{}, nil
	}
	return readResolvConf(c.ResolvConf)
}

// ParseResolvConf reads what a pod inherits from a resolv.conf: every nameserver, and the
// last search and options lines (a resolver honours only the last of each).
func ParseResolvConf(r io.Reader) (Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	for i, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				return Config{}, fmt.Errorf("line %d: nameserver without an address", i+1)
			}
			cfg.Nameservers = append(cfg.Nameservers, fields[1])
		case "search":
			// The same domain with and without its trailing dot counts once.
			cfg.Searches = nil
			for _, s := range fields[1:] {
				cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			cfg.Options = slices.Clone(fields[1:])
		}
	}
	return cfg, nil
}

// mergeOptions adds the pod's options to base; a pod's option replaces base's option of
// the same name. The result is sorted by name.
func mergeOptions(base []string, pod []corev1.PodDNSConfigOption) []string {
	byName := map[string]string{}
	for _, o := range base {
		name, value, _ := strings.Cut(o, ":")
		byName[name] = value
	}
	for _, o := range pod {
		byName[o.Name] = ""
		if o.Value != nil {
			byName[o.Name] = *o.Value
		}
	}
	out := make([]string, 0, len(byName))
	for name, value := range byName {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// fitLimits cuts cfg to what resolvers accept, saying what it left out as the kubelet does.
func fitLimits(cfg Config) (Config, []Event) {
	var events []Event
	if len(cfg.Nameservers) > MaxNameservers {
		cfg.Nameservers = cfg.Nameservers[:MaxNameservers]
		events = append(events, Event{ReasonDNSConfigForming, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Nameservers, " ")})
	}
	cut := false
	if len(cfg.Searches) > MaxSearchPaths {
		cfg.Searches, cut = cfg.Searches[:MaxSearchPaths], true
	}
	// Some resolvers (glibc 2.28) abort on a search path longer than a domain name may be.
	kept := cfg.Searches[:0:0]
	for _, s := range cfg.Searches {
		if len(s) > validation.DNS1123SubdomainMaxLength {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > MaxSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	cfg.Searches = kept
	if cut {
		events = append(events, Event{ReasonDNSConfigForming, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return cfg, events
}

// ResolvConf is cfg as a resolv.conf file, laid out as containerd writes a pod's.
func (cfg Config) ResolvConf() []byte {
	var b bytes.Buffer
	if len(cfg.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(cfg.Searches, " "))
	}
	for _, ns := range cfg.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(cfg.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(cfg.Options, " "))
	}
	return b.Bytes()
}

func unique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
