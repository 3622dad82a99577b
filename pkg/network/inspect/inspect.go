// Package inspect describes a node's pod network as it is in the kernel: the pod bridge,
// each pod's veth pair with its pod's name and IP (from libcni's result cache), the routes
// to other nodes' pod CIDRs that minilet keeps, and the VXLAN device with its forwarding and
// neighbour entries. `minilet network` prints it.
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/vishvananda/netlink"

	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/vxlan"
)

// Report is one node's pod network.
type Report struct {
	Bridge *Bridge  `json:"bridge,omitempty"`
	Pods   []Pod    `json:"pods"`
	Routes []Route  `json:"routes"` // to other nodes' pod CIDRs, made by minilet
	VXLAN  *Overlay `json:"vxlan,omitempty"`
}

// Bridge is the node's pod bridge.
type Bridge struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
	MTU       int      `json:"mtu"`
	Up        bool     `json:"up"`
	Ports     int      `json:"ports"`
}

// Pod is one pod's veth pair: the host end on the bridge, eth0 in the pod.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	IP        string `json:"ip"`
	Sandbox   string `json:"sandbox"`
	HostVeth  string `json:"hostVeth"`
	HostMAC   string `json:"hostMAC"`
	PodIf     string `json:"podInterface"`
	PodMAC    string `json:"podMAC"`
	OnBridge  bool   `json:"onBridge"` // the host end exists and is a port of the bridge
}

// Route is a route to another node's pod CIDR.
type Route struct {
	Dst    string `json:"dst"`
	Via    string `json:"via"`
	Dev    string `json:"dev"`
	OnLink bool   `json:"onlink,omitempty"`
}

// Overlay is the VXLAN device and its entries.
type Overlay struct {
	Device     string      `json:"device"`
	VNI        int         `json:"vni"`
	Port       int         `json:"port"`
	MTU        int         `json:"mtu"`
	MAC        string      `json:"mac"`
	Local      string      `json:"local"`
	Addresses  []string    `json:"addresses"`
	FDB        []FDBEntry  `json:"fdb"`
	Neighbours []Neighbour `json:"neighbours"`
}

// FDBEntry sends frames for a remote VTEP MAC to that node's IP.
type FDBEntry struct {
	MAC string `json:"mac"`
	Dst string `json:"dst"`
}

// Neighbour resolves a remote node's VTEP address to its MAC.
type Neighbour struct {
	IP  string `json:"ip"`
	MAC string `json:"mac"`
}

// Collect reads the pod network of the current network namespace; cacheDir is libcni's
// result cache (minilet's ROOT_DIR/cni/cache).
func Collect(bridgeName, cacheDir string) (*Report, error) {
	r := &Report{Pods: []Pod{}, Routes: []Route{}}
	var brIndex int
	if l, err := netlink.LinkByName(bridgeName); err == nil {
		brIndex = l.Attrs().Index
		r.Bridge = &Bridge{Name: bridgeName, MTU: l.Attrs().MTU, Up: l.Attrs().Flags&net.FlagUp != 0, Addresses: addresses(l)}
	}
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	byName := map[string]netlink.Link{}
	names := map[int]string{}
	for _, l := range links {
		byName[l.Attrs().Name] = l
		names[l.Attrs().Index] = l.Attrs().Name
		if r.Bridge != nil && l.Attrs().MasterIndex == brIndex {
			r.Bridge.Ports++
		}
	}
	pods, err := cachedPods(cacheDir)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if l, ok := byName[p.HostVeth]; ok && brIndex != 0 && l.Attrs().MasterIndex == brIndex {
			p.OnBridge = true
		}
		r.Pods = append(r.Pods, p)
	}
	routes, err := network.OwnedRoutes()
	if err != nil {
		return nil, err
	}
	for _, rt := range routes {
		r.Routes = append(r.Routes, Route{Dst: rt.Dst.String(), Via: rt.Gw.String(), Dev: names[rt.LinkIndex], OnLink: rt.Flags&int(netlink.FLAG_ONLINK) != 0})
	}
	sort.Slice(r.Routes, func(i, j int) bool { return r.Routes[i].Dst < r.Routes[j].Dst })
	if l, ok := byName[vxlan.DeviceName].(*netlink.Vxlan); ok {
		o := &Overlay{Device: l.Name, VNI: l.VxlanId, Port: l.Port, MTU: l.MTU, MAC: l.HardwareAddr.String(),
			Local: l.SrcAddr.String(), Addresses: addresses(l), FDB: []FDBEntry{}, Neighbours: []Neighbour{}}
		neighs, fdbs, err := vxlan.Entries(l.Index)
		if err != nil {
			return nil, err
		}
		for _, n := range fdbs {
			o.FDB = append(o.FDB, FDBEntry{MAC: n.HardwareAddr.String(), Dst: n.IP.String()})
		}
		for _, n := range neighs {
			o.Neighbours = append(o.Neighbours, Neighbour{IP: n.IP.String(), MAC: n.HardwareAddr.String()})
		}
		sort.Slice(o.FDB, func(i, j int) bool { return o.FDB[i].Dst < o.FDB[j].Dst })
		sort.Slice(o.Neighbours, func(i, j int) bool { return o.Neighbours[i].IP < o.Neighbours[j].IP })
		r.VXLAN = o
	}
	return r, nil
}

func addresses(l netlink.Link) []string {
	addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
	out := []string{}
	for _, a := range addrs {
		out = append(out, a.IPNet.String())
	}
	return out
}

// cacheEntry is the part of a libcni result cache file (cacheDir/results/NET-ID-IF) read here.
type cacheEntry struct {
	ContainerID string      `json:"containerId"`
	IfName      string      `json:"ifName"`
	CNIArgs     [][2]string `json:"cniArgs"`
	Result      struct {
		Interfaces []struct {
			Name    string `json:"name"`
			MAC     string `json:"mac"`
			Sandbox string `json:"sandbox"`
		} `json:"interfaces"`
		IPs []struct {
			Address   string `json:"address"`
			Interface *int   `json:"interface"`
		} `json:"ips"`
	} `json:"result"`
}

// cachedPods reads the pods wired on this node from libcni's result cache.
func cachedPods(cacheDir string) ([]Pod, error) {
	files, err := filepath.Glob(filepath.Join(cacheDir, "results", "*"))
	if err != nil {
		return nil, err
	}
	var pods []Pod
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // torn down meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read CNI result cache: %w", err)
		}
		var e cacheEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			continue // not a result file
		}
		p := Pod{Sandbox: e.ContainerID, PodIf: e.IfName}
		for _, a := range e.CNIArgs {
			switch a[0] {
			case "K8S_POD_NAMESPACE":
				p.Namespace = a[1]
			case "K8S_POD_NAME":
				p.Name = a[1]
			}
		}
		ifs := e.Result.Interfaces
		for i, itf := range ifs {
			switch {
			case itf.Sandbox != "":
				p.PodMAC = itf.MAC
				for _, ip := range e.Result.IPs {
					if ip.Interface != nil && *ip.Interface == i {
						p.IP, _, _ = strings.Cut(ip.Address, "/")
					}
				}
			case strings.HasPrefix(itf.Name, "veth"):
				p.HostVeth, p.HostMAC = itf.Name, itf.MAC
			}
		}
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name })
	return pods, nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for people: the bridge, the pods' veth pairs, the routes, the
// overlay.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Bridge != nil {
		state := "DOWN"
		if r.Bridge.Up {
			state = "UP"
		}
		fmt.Fprintf(tw, "BRIDGE %s  %s  mtu %d  %s  %d ports\n\n", r.Bridge.Name, strings.Join(r.Bridge.Addresses, ","), r.Bridge.MTU, state, r.Bridge.Ports)
	} else {
		fmt.Fprintf(tw, "BRIDGE none (no pod was wired yet, or the operator's network uses none)\n\n")
	}
	fmt.Fprintln(tw, "POD\tIP\tHOST VETH\tHOST MAC\t\tPOD IF\tPOD MAC\tSANDBOX")
	for _, p := range r.Pods {
		link := "<->"
		if !p.OnBridge {
			link = "(off bridge)"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.IP, p.HostVeth, p.HostMAC, link, p.PodIf, p.PodMAC, p.Sandbox)
	}
	fmt.Fprintln(tw, "\nROUTES TO OTHER NODES' PODS\tVIA\tDEV")
	for _, rt := range r.Routes {
		via := rt.Via
		if rt.OnLink {
			via += " onlink"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", rt.Dst, via, rt.Dev)
	}
	if o := r.VXLAN; o != nil {
		fmt.Fprintf(tw, "\nVXLAN %s  vni %d  port %d  local %s  mac %s  mtu %d  %s\n", o.Device, o.VNI, o.Port, o.Local, o.MAC, o.MTU, strings.Join(o.Addresses, ","))
		fmt.Fprintln(tw, "FDB MAC\tDST")
		for _, f := range o.FDB {
			fmt.Fprintf(tw, "%s\t%s\n", f.MAC, f.Dst)
		}
		fmt.Fprintln(tw, "NEIGHBOUR\tMAC")
		for _, n := range o.Neighbours {
			fmt.Fprintf(tw, "%s\t%s\n", n.IP, n.MAC)
		}
	}
	return tw.Flush()
}
