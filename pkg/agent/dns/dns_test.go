package dns

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const nodeResolvConf = `# written by the node's DHCP client
nameserver 192.0.2.53
nameserver 192.0.2.54
search corp.example. lab.example
options timeout:2 attempts:3
`

func configurer(t *testing.T, clusterDNS ...string) *Configurer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(nodeResolvConf), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Configurer{ClusterDomain: "cluster.local", ResolvConf: path}
	for _, ip := range clusterDNS {
		c.ClusterDNS = append(c.ClusterDNS, net.ParseIP(ip))
	}
	return c
}

func pod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "uid-1"}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestResolvConfByPolicy(t *testing.T) {
	clusterFirst := "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\n" +
		"nameserver 10.96.0.10\n" +
		"options ndots:5\n"
	node := "search corp.example lab.example\n" +
		"nameserver 192.0.2.53\nnameserver 192.0.2.54\n" +
		"options timeout:2 attempts:3\n"
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"no policy is ClusterFirst": {pod(nil), clusterFirst},
		"ClusterFirst":              {pod(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSClusterFirst }), clusterFirst},
		"ClusterFirst on the host network is Default": {pod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy, p.Spec.HostNetwork = corev1.DNSClusterFirst, true
		}), node},
		"ClusterFirstWithHostNet": {pod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy, p.Spec.HostNetwork = corev1.DNSClusterFirstWithHostNet, true
		}), clusterFirst},
		"Default": {pod(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }), node},
		"None with dnsConfig": {pod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: []string{"203.0.113.1"}, Searches: []string{"a.example"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
			}
		}), "search a.example\nnameserver 203.0.113.1\noptions edns0 ndots:2\n"},
		"ClusterFirst merged with dnsConfig": {pod(func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: []string{"10.96.0.10", "203.0.113.1"},
				Searches:    []string{"svc.cluster.local", "extra.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "single-request-reopen"}},
			}
		}), "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example extra.example\n" +
			"nameserver 10.96.0.10\nnameserver 203.0.113.1\n" +
			"options ndots:1 single-request-reopen\n"},
		"Default merged with dnsConfig": {pod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSDefault
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "attempts", Value: ptr.To("5")}}}
		}), "search corp.example lab.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions attempts:5 timeout:2\n"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, events, err := configurer(t, "10.96.0.10").PodDNS(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(cfg.ResolvConf()); got != tc.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, tc.want)
			}
			if len(events) != 0 {
				t.Errorf("events %v, want none", events)
			}
		})
	}
}

func TestNoClusterDNSFallsBackToDefault(t *testing.T) {
	cfg, events, err := configurer(t).PodDNS(pod(nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Nameservers, " ") != "192.0.2.53 192.0.2.54" {
		t.Errorf("nameservers %v, want the node's", cfg.Nameservers)
	}
	if len(events) != 1 || events[0].Reason != ReasonMissingClusterDNS ||
		!strings.Contains(events[0].Message, `cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`) {
		t.Errorf("events %v, want one MissingClusterDNS", events)
	}
}

func TestNoNodeResolvConf(t *testing.T) {
	c := &Configurer{ClusterDomain: "cluster.local", ClusterDNS: []net.IP{net.ParseIP("10.96.0.10")}}
	cfg, _, err := c.PodDNS(pod(func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSDefault }))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(cfg.ResolvConf()), "search .\nnameserver 127.0.0.1\n"; got != want {
		t.Errorf("Default without --resolv-conf: %q, want %q", got, want)
	}
	cfg, _, err = c.PodDNS(pod(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(cfg.Searches, " "), "shop.svc.cluster.local svc.cluster.local cluster.local"; got != want {
		t.Errorf("ClusterFirst without --resolv-conf searches %q, want %q", got, want)
	}
}

func TestMissingNodeResolvConfIsAnError(t *testing.T) {
	c := &Configurer{ResolvConf: "/nonexistent/resolv.conf"}
	if _, _, err := c.PodDNS(pod(nil)); err == nil || !strings.Contains(err.Error(), "--resolv-conf") {
		t.Errorf("err = %v, want one naming --resolv-conf", err)
	}
}

func TestLimits(t *testing.T) {
	var searches []string
	for i := range 40 {
		searches = append(searches, fmt.Sprintf("d%d.example", i))
	}
	cfg, events, err := configurer(t, "10.96.0.10").PodDNS(pod(func(p *corev1.Pod) {
		p.Spec.DNSConfig = &corev1.PodDNSConfig{
			Nameservers: []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"},
			Searches:    searches,
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Nameservers, " "); got != "10.96.0.10 203.0.113.1 203.0.113.2" {
		t.Errorf("nameservers %q, want the first %d", got, MaxNameservers)
	}
	if len(cfg.Searches) != MaxSearchPaths || cfg.Searches[0] != "shop.svc.cluster.local" {
		t.Errorf("%d searches starting %v, want the first %d", len(cfg.Searches), cfg.Searches[:1], MaxSearchPaths)
	}
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason+": "+e.Message)
	}
	if len(events) != 2 || !strings.Contains(reasons[0], "Nameserver limits were exceeded") || !strings.Contains(reasons[1], "Search Line limits were exceeded") {
		t.Errorf("events:\n%s", strings.Join(reasons, "\n"))
	}

	long := strings.Repeat("a", 254) + ".example"
	cfg, events, _ = configurer(t, "10.96.0.10").PodDNS(pod(func(p *corev1.Pod) {
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{long, "ok.example"}}
	}))
	if strings.Contains(strings.Join(cfg.Searches, " "), long) || cfg.Searches[len(cfg.Searches)-1] != "ok.example" || len(events) != 1 {
		t.Errorf("an over-long search path must be dropped with an event: %v %v", cfg.Searches, events)
	}
}

func TestParseResolvConf(t *testing.T) {
	cfg, err := ParseResolvConf(strings.NewReader("search a.example\n; comment\nnameserver 1.1.1.1\nsearch b.example. c.example\noptions ndots:2\noptions rotate\n"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cfg) != "{[1.1.1.1] [b.example c.example] [rotate]}" {
		t.Errorf("parsed %v: the last search and options lines win, trailing dots go", cfg)
	}
	if _, err := ParseResolvConf(strings.NewReader("nameserver\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("an empty nameserver line: err = %v", err)
	}
}

func TestHostsFile(t *testing.T) {
	c := configurer(t, "10.96.0.10")
	aliases := []corev1.HostAlias{{IP: "192.0.2.10", Hostnames: []string{"db", "db.local"}}}
	got, err := c.HostsFile(pod(func(p *corev1.Pod) { p.Spec.HostAliases = aliases }), "web-1", []string{"10.244.1.7"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		"10.244.1.7\tweb-1\n\n# Entries added by HostAliases.\n192.0.2.10\tdb\tdb.local\n"
	if string(got) != want {
		t.Errorf("hosts:\n%s\nwant:\n%s", got, want)
	}

	got, err = c.HostsFile(pod(func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "dbs" }), "db-0", []string{"10.244.1.8"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(got), "\n10.244.1.8\tdb-0.dbs.shop.svc.cluster.local\tdb-0\n") {
		t.Errorf("a pod with a subdomain gets its FQDN:\n%s", got)
	}

	node := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(node, []byte("127.0.0.1 localhost\n192.0.2.1 node-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = c.HostsFile(pod(func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostAliases = true, aliases }), "node-1", []string{"192.0.2.1"}, node)
	if err != nil {
		t.Fatal(err)
	}
	want = "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.0.2.1 node-1\n\n# Entries added by HostAliases.\n192.0.2.10\tdb\tdb.local\n"
	if string(got) != want {
		t.Errorf("host network hosts:\n%s\nwant:\n%s", got, want)
	}
}
