// Package lab builds a minik8s cluster's network on one Linux host out of network namespaces,
// and supervises the processes that run in it. minilab and the end-to-end tests use it.
//
// A lab NAME is:
//   - a switch namespace mk-NAME-sw holding bridge br0;
//   - a control-plane namespace mk-NAME-cp and one namespace mk-NAME-node-i per node, each
//     with eth0 cabled to br0 by a veth pair whose switch end is named after the member
//     (cp, node-i): cp is 10.200.0.2/24, node-i is 10.200.0.(10+i)/24 with pod CIDR
//     10.244.i.0/24. Routes between nodes' pods are minilet's (--pod-network), not the lab's;
//     the control plane (mk-NAME-cp, cp-i) routes each node's pod CIDR via the node (via the
//     router for a node on another segment, and the router via the node), so miniapi
//     reaches pods (pods/proxy, services/proxy) as kube-apiserver does from its host;
//   - with Spec.ControlPlanes = N > 1: control-plane members mk-NAME-cp-1 ... cp-N at
//     10.200.0.(4+i) on segment 0 (an etcd member and a miniapi each); mk-NAME-cp then
//     holds the API balancer in front of them on the control-plane address;
//   - with Spec.Segments = S > 1: switches mk-NAME-sw, mk-NAME-sw1 ... for segments
//     10.200.SEG.0/24, node-i on segment (i-1) mod S at 10.200.SEG.(10+i), the control plane
//     on segment 0, and a router namespace mk-NAME-rt (eth<SEG> at 10.200.SEG.1, forwarding
//     on) as the only way between segments;
//   - a client namespace mk-NAME-client (eth0 at 10.200.0.3/24 on segment 0): a machine on
//     the lab segment that is no node, to reach LoadBalancer addresses from outside the
//     cluster as a user's laptop on the same LAN would;
//   - with Spec.Uplink: a router mk-NAME-up (10.200.0.4 on segment 0) and behind it an
//     "internet" host mk-NAME-inet at 203.0.113.10/24 (Uplink); members route only
//     203.0.113.0/24 to the router;
//   - no default route anywhere, and nothing added to the host namespace: veths are created
//     with their ends directly in the lab namespaces. The host reaches a lab only through
//     forwarder processes on its loopback (Publication, package forward).
//   - a DNS server outside the cluster (package upstreamdns, run by cluster.Up) on the
//     control plane's address: each node's resolv.conf (node-i/resolv.conf, minilet
//     --resolv-conf) names it, and it serves the names of StateDir/upstream-dns.hosts;
//   - state in /var/lib/minik8s/labs/NAME (lab.json, logs/, per-node static pod dirs) and
//     runtime files in /run/minik8s/labs/NAME (per-node run dirs, for minilet --root-dir).
//
// The API:
//
//	Create(Spec) (*Lab, error)            topology, dirs and lab.json; undone when it fails
//	Load(name) (*Lab, error)              read lab.json
//	(*Lab).Save() error                   write lab.json (after changing Kubeconfig, say)
//	(*Lab).Start(Process) (int, error)    run a daemon in a lab namespace, logged and recorded
//	(*Lab).Stop(name, grace) error        SIGTERM, wait up to grace, SIGKILL
//	Command(ctx, netns, prog, args...)    an *exec.Cmd running prog in a lab namespace
//	Destroy(name) error                   remove everything, also after a crash; idempotent
//	Sweep() ([]string, error)             destroy labs whose recorded processes all died
//	(*Lab).StopProcess, StartProcess, Partition, SetNetem, SetLink, Heal   faults (fault.go)
//
// Processes run in a lab namespace through nsenter --net, which keeps them in the host mount
// namespace: the pod namespaces a minilet bind-mounts are then visible to containerd.
package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/minik8s/minik8s/pkg/clusterdefaults"
)

// Where labs live on the host.
const (
	StateRoot = "/var/lib/minik8s/labs"
	RunRoot   = "/run/minik8s/labs"
	NetNSDir  = "/run/netns" // where `ip netns` finds namespaces, so `ip netns exec` works too
)

// Fixed addressing (docs/contracts.md).
const (
	Subnet          = "10.200.0.0/24"
	ClusterCIDR     = clusterdefaults.ClusterCIDR
	ServiceCIDR     = clusterdefaults.ServiceCIDR
	ControlPlaneIP  = "10.200.0.2"
	ClientIP        = "10.200.0.3" // the client namespace: on the segment, not a node
	BridgeName      = "br0"
	MemberInterface = "eth0"
	// UpstreamDNS is the lab's DNS server outside the cluster, the nameserver of every
	// node's resolv.conf: on the control plane's address, reachable from every segment.
	UpstreamDNS = ControlPlaneIP
)

// MaxNameLen keeps socket paths under /run/minik8s/labs/NAME well inside the 108-byte limit
// of unix socket addresses and namespace names short enough to type.
const MaxNameLen = 20

// MaxNodes keeps node addresses 10.200.0.(10+i) inside the /24.
const MaxNodes = 200

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a lab name: lower-case letters, digits and inner hyphens, at most
// MaxNameLen characters.
func ValidateName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("lab name %q is longer than %d characters", name, MaxNameLen)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("lab name %q must be lower-case letters, digits and inner hyphens ([a-z0-9]([-a-z0-9]*[a-z0-9])?)", name)
	}
	return nil
}

// Spec is what to build.
type Spec struct {
	Name  string
	Nodes int
	// Segments > 1 puts the nodes on that many switches (node-i on segment (i-1) mod
	// Segments, 10.200.SEG.0/24) joined only by a router namespace; the control plane stays
	// on segment 0.
	Segments int
	// PodNetwork is how nodes' pods reach each other (minilet --pod-network); recorded only.
	PodNetwork string
	// Uplink adds a way out inside the lab: a router and an "internet" host (Uplink).
	Uplink bool
	// ControlPlanes > 1 adds that many control-plane members cp-1..cp-N (ControlPlanes):
	// namespaces on segment 0 for an etcd member and a miniapi each, behind the API
	// balancer on the control-plane address.
	ControlPlanes int
}

// MaxControlPlanes keeps members' addresses 10.200.0.(4+i) below the nodes'.
const MaxControlPlanes = 5

// ControlPlaneMemberIP is control-plane member cp-i's address: after the uplink router's
// (.4), below node-1's (.11).
func ControlPlaneMemberIP(i int) string { return fmt.Sprintf("10.200.0.%d", 4+i) }

// MaxSegments keeps segment subnets 10.200.SEG.0/24 apart from the Service range.
const MaxSegments = 8

// Lab describes a lab; it is what lab.json holds.
type Lab struct {
	Name             string          `json:"name"`
	StateDir         string          `json:"stateDir"`
	RunDir           string          `json:"runDir"`
	Subnet           string          `json:"subnet"`
	ClusterCIDR      string          `json:"clusterCIDR"`
	ServiceCIDR      string          `json:"serviceCIDR"`
	SwitchNetNS      string          `json:"switchNetNS"`          // segment 0's switch
	Switches         []string        `json:"switches,omitempty"`   // every segment's switch, segment 0 first
	Router           *Router         `json:"router,omitempty"`     // joins the segments
	PodNetwork       string          `json:"podNetwork,omitempty"` // minilet --pod-network
	ControlPlane     Member          `json:"controlPlane"`
	ControlPlanes    []Member        `json:"controlPlanes,omitempty"` // cp-1..cp-N of a highly available lab (Spec.ControlPlanes)
	Client           *Member         `json:"client,omitempty"`        // on segment 0, not a node (labs made before it have none)
	Uplink           *Uplink         `json:"uplink,omitempty"`        // Spec.Uplink's router and internet host
	Nodes            []Node          `json:"nodes"`
	Kubeconfig       string          `json:"kubeconfig"`                 // admin kubeconfig; miniapi --data-dir=StateDir writes it here
	HostKubeconfig   string          `json:"hostKubeconfig,omitempty"`   // the same admin, through the API published on the host's loopback
	Published        []Publication   `json:"published,omitempty"`        // host loopback ports forwarded into the lab
	Faults           []Fault         `json:"faults,omitempty"`           // failures made on purpose, until healed
	UpstreamDNS      string          `json:"upstreamDNS,omitempty"`      // the nameserver of the nodes' resolv.conf
	UpstreamDNSHosts string          `json:"upstreamDNSHosts,omitempty"` // the names it serves (hosts file)
	Processes        []ProcessRecord `json:"processes"`

	mu sync.Mutex // guards Processes and lab.json writes
}

// Member is a namespace on the lab switch.
type Member struct {
	Name  string `json:"name"`  // also the switch-side veth name
	NetNS string `json:"netns"` // namespace name, in NetNSDir
	IP    string `json:"ip"`
}

// Publication is a host loopback address whose connections a forwarder process (minilab
// forward) dials from inside a lab namespace: the only way from the host into a lab.
type Publication struct {
	Listen  string `json:"listen"`  // 127.0.0.1:PORT on the host
	NetNS   string `json:"netns"`   // where the connections to Target are dialed from
	Target  string `json:"target"`  // IP:PORT inside the lab
	Process string `json:"process"` // the forwarder's process name
}

// Router is the namespace routing between the lab segments: eth<SEG> at 10.200.SEG.1.
type Router struct {
	NetNS string   `json:"netns"`
	IPs   []string `json:"ips"` // one per segment, in order
}

// Node is a lab node.
type Node struct {
	Name        string `json:"name"`  // node-i: node name and switch-side veth name
	NetNS       string `json:"netns"` // mk-NAME-node-i
	IP          string `json:"ip"`
	Segment     int    `json:"segment"` // which switch it is cabled to
	PodCIDR     string `json:"podCIDR"`
	ManifestDir string `json:"manifestDir"` // static pods (minilet --pod-manifest-path)
	ResolvConf  string `json:"resolvConf"`  // the node's resolver configuration (minilet --resolv-conf)
	RunDir      string `json:"runDir"`      // minilet --root-dir: pod netns mounts, CNI state
}

// NetNSPath is where the lab namespace name is mounted.
func NetNSPath(name string) string { return filepath.Join(NetNSDir, name) }

// describe fills in every name and path of a lab from its spec.
func describe(spec Spec) *Lab {
	l := &Lab{
		Name:        spec.Name,
		StateDir:    filepath.Join(StateRoot, spec.Name),
		RunDir:      filepath.Join(RunRoot, spec.Name),
		Subnet:      Subnet,
		ClusterCIDR: ClusterCIDR,
		ServiceCIDR: ServiceCIDR,
		SwitchNetNS: netnsName(spec.Name, "sw"),
		PodNetwork:  spec.PodNetwork,
		ControlPlane: Member{
			Name: "cp", NetNS: netnsName(spec.Name, "cp"), IP: ControlPlaneIP,
		},
		Client:    &Member{Name: "client", NetNS: netnsName(spec.Name, "client"), IP: ClientIP},
		Processes: []ProcessRecord{},
	}
	if spec.Uplink {
		l.Uplink = &Uplink{RouterNetNS: netnsName(spec.Name, "up"), RouterIP: UplinkRouterIP,
			NetNS: netnsName(spec.Name, "inet"), IP: UplinkHostIP, Subnet: UplinkSubnet}
	}
	if spec.ControlPlanes > 1 {
		for i := 1; i <= spec.ControlPlanes; i++ {
			name := fmt.Sprintf("cp-%d", i)
			l.ControlPlanes = append(l.ControlPlanes, Member{Name: name, NetNS: netnsName(spec.Name, name), IP: ControlPlaneMemberIP(i)})
		}
	}
	l.Kubeconfig = filepath.Join(l.StateDir, "admin.kubeconfig")
	l.UpstreamDNS = UpstreamDNS
	l.UpstreamDNSHosts = filepath.Join(l.StateDir, "upstream-dns.hosts")
	segments := max(spec.Segments, 1)
	l.Switches = []string{l.SwitchNetNS}
	if segments > 1 {
		l.Router = &Router{NetNS: netnsName(spec.Name, "rt")}
		for s := range segments {
			if s > 0 {
				l.Switches = append(l.Switches, netnsName(spec.Name, fmt.Sprintf("sw%d", s)))
			}
			l.Router.IPs = append(l.Router.IPs, fmt.Sprintf("10.200.%d.1", s))
		}
	}
	for i := 1; i <= spec.Nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		seg := (i - 1) % segments
		l.Nodes = append(l.Nodes, Node{
			Name:        name,
			NetNS:       netnsName(spec.Name, name),
			IP:          fmt.Sprintf("10.200.%d.%d", seg, 10+i),
			Segment:     seg,
			PodCIDR:     fmt.Sprintf("10.244.%d.0/24", i),
			ManifestDir: filepath.Join(l.StateDir, name, "manifests"),
			ResolvConf:  filepath.Join(l.StateDir, name, "resolv.conf"),
			RunDir:      filepath.Join(l.RunDir, name),
		})
	}
	return l
}

func netnsName(lab, member string) string { return "mk-" + lab + "-" + member }

// netnsPattern matches exactly the namespace names of lab name. It does not match other
// labs' names even where one lab name prefixes another ("a" vs "a-b").
func netnsPattern(name string) *regexp.Regexp {
	return regexp.MustCompile(`^mk-` + regexp.QuoteMeta(name) + `-(sw[0-9]*|cp|cp-[0-9]+|rt|up|inet|client|node-[0-9]+)$`)
}

// switchPattern matches the switch namespaces of lab name.
func switchPattern(name string) *regexp.Regexp {
	return regexp.MustCompile(`^mk-` + regexp.QuoteMeta(name) + `-sw[0-9]*$`)
}

// labNetNS lists the lab namespaces present in NetNSDir.
func labNetNS(name string) ([]string, error) {
	entries, err := os.ReadDir(NetNSDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list network namespaces: %w", err)
	}
	re := netnsPattern(name)
	var names []string
	for _, e := range entries {
		if re.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func labFile(name string) string { return filepath.Join(StateRoot, name, "lab.json") }

// Load reads the lab.json of lab name. A missing lab gives an error matching fs.ErrNotExist.
func Load(name string) (*Lab, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(labFile(name))
	if err != nil {
		return nil, fmt.Errorf("load lab %q: %w", name, err)
	}
	l := &Lab{}
	if err := json.Unmarshal(raw, l); err != nil {
		return nil, fmt.Errorf("load lab %q: %s is corrupt: %w", name, labFile(name), err)
	}
	return l, nil
}

// Save writes lab.json atomically.
func (l *Lab) Save() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.save()
}

func (l *Lab) save() error {
	raw, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encode lab %q: %w", l.Name, err)
	}
	path := labFile(l.Name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("save lab %q: %w", l.Name, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save lab %q: %w", l.Name, err)
	}
	return nil
}
