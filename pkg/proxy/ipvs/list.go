package ipvs

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	libipvs "github.com/moby/ipvs"
)

// List prints the kernel's IPVS table as `ipvsadm -Ln` does (no ipvsadm binary needed):
//
//	TCP  10.96.0.10:80 rr
//	  -> 10.244.1.2:8080              Masq    1      0          0
func List() (string, error) {
	h, err := openIPVS()
	if err != nil {
		return "", err
	}
	defer h.Close()
	svcs, err := h.GetServices()
	if err != nil {
		return "", fmt.Errorf("list IPVS virtual servers: %w", err)
	}
	byKey := map[vsKey]*libipvs.Service{}
	for _, s := range svcs {
		if s.Address != nil && s.FWMark == 0 {
			byKey[vsKey{Proto: s.Protocol, IP: s.Address.String(), Port: s.Port}] = s
		}
	}
	var b strings.Builder
	b.WriteString("Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n")
	for _, k := range sortedKeys(byKey) {
		s := byKey[k]
		fmt.Fprintf(&b, "%-4s %s %s", protoName(k.Proto), net.JoinHostPort(k.IP, strconv.Itoa(int(k.Port))), s.SchedName)
		if s.Flags&flagPersistent != 0 {
			fmt.Fprintf(&b, " persistent %d", s.Timeout)
		}
		b.WriteByte('\n')
		dests, err := h.GetDestinations(s)
		if err != nil {
			return "", fmt.Errorf("list real servers of %s: %w", k, err)
		}
		sort.Slice(dests, func(i, j int) bool {
			return dests[i].Address.String()+strconv.Itoa(int(dests[i].Port)) < dests[j].Address.String()+strconv.Itoa(int(dests[j].Port))
		})
		for _, d := range dests {
			fmt.Fprintf(&b, "  -> %-28s %-7s %-6d %-10d %d\n", net.JoinHostPort(d.Address.String(), strconv.Itoa(int(d.Port))),
				forward(d.ConnectionFlags), d.Weight, d.ActiveConnections, d.InactiveConnections)
		}
	}
	return b.String(), nil
}

func forward(flags uint32) string {
	switch flags & libipvs.ConnectionFlagFwdMask {
	case libipvs.ConnectionFlagMasq:
		return "Masq"
	case libipvs.ConnectionFlagLocalNode:
		return "Local"
	case libipvs.ConnectionFlagTunnel:
		return "Tunnel"
	case libipvs.ConnectionFlagDirectRoute:
		return "Route"
	}
	return "?"
}
