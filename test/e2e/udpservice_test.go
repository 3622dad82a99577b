package e2e

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/network"
	corev1 "k8s.io/api/core/v1"
)

const udpApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: udp}
spec:
  replicas: 1
  selector: {matchLabels: {app: udp}}
  template:
    metadata: {labels: {app: udp}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1, ports: [{containerPort: 8081, protocol: UDP}]}]
---
apiVersion: v1
kind: Service
metadata: {name: udp}
spec:
  selector: {app: udp}
  ports: [{port: 53, targetPort: 8081, protocol: UDP}]
`

// TestUDPServiceFollowsItsEndpoint keeps one UDP flow (one source port, a packet every
// 200 ms, so the kernel never lets its conntrack entry expire) to a Service while its only
// endpoint is replaced: miniproxy deletes the entry that still sends the flow to the old
// pod, and the same flow reaches the new one.
func TestUDPServiceFollowsItsEndpoint(t *testing.T) {
	l := upLab(t, "e2e-udp", 1)
	kubectl := func(args ...string) string { t.Helper(); return mustKubectl(t, l, args...) }
	applyYAML(t, l, udpApp)
	kubectl("rollout", "status", "deployment/udp", "--timeout=120s")
	waitReadyEndpoints(t, l, "udp", 1)
	var svc corev1.Service
	if err := json.Unmarshal([]byte(kubectl("get", "service", "udp", "-o", "json")), &svc); err != nil {
		t.Fatal(err)
	}
	var conn *net.UDPConn
	err := network.InNetNS(lab.NetNSPath(l.Nodes[0].NetNS), func() error {
		c, err := net.DialUDP("udp", &net.UDPAddr{Port: 40053}, &net.UDPAddr{IP: net.ParseIP(svc.Spec.ClusterIP), Port: 53})
		conn = c
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ask := func(within time.Duration, ok func(string) bool) string {
		t.Helper()
		buf := make([]byte, 256)
		last := ""
		for deadline := time.Now().Add(within); time.Now().Before(deadline); {
			_, _ = conn.Write([]byte("hostname"))
			_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if n, err := conn.Read(buf); err == nil {
				if last = string(buf[:n]); ok(last) {
					return last
				}
			} else if !strings.Contains(err.Error(), "timeout") {
				time.Sleep(200 * time.Millisecond) // refused while there is no endpoint
			}
		}
		t.Fatalf("the UDP flow to %s:53 got %q after %v", svc.Spec.ClusterIP, last, within)
		return ""
	}
	first := ask(20*time.Second, func(s string) bool { return strings.HasPrefix(s, "udp-") })
	kubectl("delete", "pod", first, "--wait=false")
	// The same flow, never idle: it reaches the new pod once miniproxy has synced.
	second := ask(60*time.Second, func(s string) bool { return strings.HasPrefix(s, "udp-") && s != first })
	t.Logf("the flow moved from %s to %s", first, second)
}
