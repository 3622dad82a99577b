package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/minik8s/minik8s/pkg/network"
)

// httpGetIn does an HTTP GET from inside the network namespace at netnsPath. The socket is
// created on a thread switched into that namespace (it belongs there for good); the request
// is then written and read on it directly, since http.Client would dial on other threads.
func httpGetIn(netnsPath, rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	var conn net.Conn
	err = network.InNetNS(netnsPath, func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err := d.DialContext(context.Background(), "tcp", u.Host)
		conn = c
		return err
	})
	if err != nil {
		return "", fmt.Errorf("connect to %s from %s: %w", u.Host, netnsPath, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s", rawURL, resp.Status)
	}
	return string(body), err
}
