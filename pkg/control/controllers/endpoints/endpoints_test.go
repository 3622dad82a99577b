package endpoints

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func addresses(prefix string, n int) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, n)
	for i := range out {
		out[i].IP = fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250)
	}
	return out
}

// As kube's endpoint controller: at most 1000 addresses, each subset keeping its share
// (rounded up), ready addresses before not-ready ones.
func TestTruncateOverCapacity(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		subsets                 []corev1.EndpointSubset
		truncated               bool
		wantReady, wantNotReady []int
	}{
		{name: "at capacity", subsets: []corev1.EndpointSubset{{Addresses: addresses("10.1", 600), NotReadyAddresses: addresses("10.2", 400)}},
			wantReady: []int{600}, wantNotReady: []int{400}},
		{name: "not ready cut", truncated: true,
			subsets: []corev1.EndpointSubset{
				{Addresses: addresses("10.1", 500), NotReadyAddresses: addresses("10.2", 300)},
				{Addresses: addresses("10.3", 100), NotReadyAddresses: addresses("10.4", 100)},
				{NotReadyAddresses: addresses("10.5", 200)}},
			// 400 not-ready places for 600: 300*2/3=200, 100*2/3=66.7->67, then 133 left of 200's share 134.
			wantReady: []int{500, 100, 0}, wantNotReady: []int{200, 67, 133}},
		{name: "ready cut", truncated: true,
			subsets: []corev1.EndpointSubset{
				{Addresses: addresses("10.1", 900), NotReadyAddresses: addresses("10.2", 10)},
				{Addresses: addresses("10.3", 300)}},
			wantReady: []int{750, 250}, wantNotReady: []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := truncate(tc.subsets); got != tc.truncated {
				t.Errorf("truncated = %v, want %v", got, tc.truncated)
			}
			for i, ss := range tc.subsets {
				if len(ss.Addresses) != tc.wantReady[i] || len(ss.NotReadyAddresses) != tc.wantNotReady[i] {
					t.Errorf("subset %d: %d ready, %d not ready; want %d, %d", i, len(ss.Addresses), len(ss.NotReadyAddresses), tc.wantReady[i], tc.wantNotReady[i])
				}
			}
		})
	}
}
