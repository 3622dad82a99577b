// Package l2 makes LoadBalancer addresses answer from outside the nodes on a shared layer-2
// segment, as MetalLB's layer-2 mode does: for each address one node is elected, answers
// ARP for it on the segment's interfaces and so draws its traffic (which the proxier's
// rules then send to the Service's endpoints); when that node goes, another is elected and
// announces the move with gratuitous ARP.
package l2

import (
	"bytes"
	"crypto/sha256"
	"slices"
)

// Elect picks the node that answers for ip among candidates, as MetalLB's layer-2 mode
// does: the candidates ordered by the SHA-256 of "node#ip", the first wins. Every node
// computes it alone from the same inputs and agrees, with no lease; and Services sharing
// an address get the same node. "" when there is no candidate.
func Elect(ip string, candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	best := slices.MinFunc(candidates, func(a, b string) int {
		ha, hb := sha256.Sum256([]byte(a+"#"+ip)), sha256.Sum256([]byte(b+"#"+ip))
		return bytes.Compare(ha[:], hb[:])
	})
	return best
}
