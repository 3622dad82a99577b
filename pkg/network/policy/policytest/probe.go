package policytest

import (
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/network"
	corev1 "k8s.io/api/core/v1"
)

// Exchange dials ip on pr from inside the network namespace at netns, sends request (if
// any) and returns the answer: one datagram for UDP, everything until the server closes for
// TCP. Dial and exchange are each bounded by a second, so a dropped probe costs one.
func Exchange(netns, ip string, pr Probe, request []byte) ([]byte, error) {
	var got []byte
	err := network.InNetNS(netns, func() error {
		c, err := net.DialTimeout(strings.ToLower(string(pr.Proto)), net.JoinHostPort(ip, strconv.Itoa(pr.Port)), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if len(request) > 0 {
			if _, err := c.Write(request); err != nil {
				return err
			}
		}
		if pr.Proto == corev1.ProtocolUDP {
			buf := make([]byte, 256)
			n, err := c.Read(buf)
			got = buf[:n]
			return err
		}
		got, err = io.ReadAll(c)
		return err
	})
	return got, err
}
