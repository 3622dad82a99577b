package iptables

import (
	"fmt"
	"testing"

	"github.com/minik8s/minik8s/pkg/proxy"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkBuildRules lays out 10 000 services x 2 endpoints: the Go side of a full sync.
func BenchmarkBuildRules(b *testing.B) {
	ports := make([]proxy.ServicePort, 10000)
	for i := range ports {
		ports[i] = proxy.ServicePort{Name: fmt.Sprintf("bench/svc-%05d:http", i), Protocol: corev1.ProtocolTCP,
			ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), Port: 80,
			Endpoints: []proxy.Endpoint{{IP: fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), Port: 8080, Ready: true},
				{IP: fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), Port: 8080, Ready: true}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		rs := buildRules(Config{ClusterCIDR: "10.244.0.0/16"}, ports)
		for _, t := range []*table{rs.filter, rs.nat} {
			for _, c := range t.order {
				t.sum(c)
			}
		}
	}
}
