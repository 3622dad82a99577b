// Package apilb is the stable API address of a lab with several API servers: a TCP
// balancer, as kind's "external-load-balancer" haproxy container is for its control
// planes. Each connection goes to the next healthy backend in turn; every backend is
// checked once a period, and one whose check fails takes no new connections until a check
// passes again (unless none passes: then every backend that accepts is tried). TLS passes through untouched, so clients verify the API server itself.
package apilb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/lab/forward"
)

// DefaultInterval is how often each backend is checked: a dead backend leaves the
// rotation within about two periods.
const DefaultInterval = time.Second

// Balancer spreads connections over Backends.
type Balancer struct {
	Backends []string      // host:port
	Interval time.Duration // DefaultInterval when 0
	// Check tells whether a backend should take connections; TCPCheck when nil. Each
	// call is bounded by Interval.
	Check func(ctx context.Context, backend string) error
	Logf  func(format string, args ...any)
	// Ready, when set, is called once the first round of checks is done, just before the
	// first connection is taken (systemd's READY=1).
	Ready func()

	mu      sync.Mutex
	healthy map[string]bool
	next    int
}

// TCPCheck passes when the backend accepts a connection.
func TCPCheck(ctx context.Context, backend string) error {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", backend)
	if err != nil {
		return err
	}
	return conn.Close()
}

// ReadyzCheck passes when the backend answers GET /readyz with 200 over TLS verified by
// roots, as kind's haproxy checks its API servers: a server that is up but not ready (its
// store unreachable, its roles not yet made) takes no clients.
func ReadyzCheck(roots *x509.CertPool) func(ctx context.Context, backend string) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	return func(ctx context.Context, backend string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+backend+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s", resp.Status)
		}
		return nil
	}
}

// Serve checks the backends and balances the connections of ln over the healthy ones
// until ctx ends. The first round of checks is done before the first connection is taken.
func (b *Balancer) Serve(ctx context.Context, ln net.Listener) error {
	if len(b.Backends) == 0 {
		return errors.New("apilb: no backends")
	}
	if b.Interval <= 0 {
		b.Interval = DefaultInterval
	}
	if b.Check == nil {
		b.Check = TCPCheck
	}
	if b.Logf == nil {
		b.Logf = func(string, ...any) {}
	}
	b.checkAll(ctx)
	if b.Ready != nil {
		b.Ready()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t := time.NewTicker(b.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				b.checkAll(ctx)
			}
		}
	})
	return forward.ServeDialing(ctx, ln, b.dial, b.Logf)
}

// Healthy lists the backends taking connections, in Backends' order.
func (b *Balancer) Healthy() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, be := range b.Backends {
		if b.healthy[be] {
			out = append(out, be)
		}
	}
	return out
}

// checkAll checks every backend at once and records the outcome, logging changes.
func (b *Balancer) checkAll(ctx context.Context) {
	results := make([]error, len(b.Backends))
	var wg sync.WaitGroup
	for i, be := range b.Backends {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, b.Interval)
			defer cancel()
			results[i] = b.Check(cctx, be)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.healthy == nil {
		b.healthy = map[string]bool{}
	}
	for i, be := range b.Backends {
		ok := results[i] == nil
		if was, seen := b.healthy[be]; !seen || was != ok {
			if ok {
				b.Logf("backend %s is UP", be)
			} else {
				b.Logf("backend %s is DOWN: %v", be, results[i])
			}
		}
		b.healthy[be] = ok
	}
}

// dial connects to the healthy backends in turn, starting after the last one used, and
// takes a backend out at once when it refuses (without waiting for its next check). When
// no backend passes its check (every API server lost its store's quorum, say), it tries
// them all: an API server that answers with why it cannot serve tells the client more
// than a closed connection.
func (b *Balancer) dial(ctx context.Context) (net.Conn, error) {
	b.mu.Lock()
	start := b.next
	b.next++
	b.mu.Unlock()
	candidates := b.Healthy()
	if len(candidates) == 0 {
		candidates = b.Backends
	}
	n := len(b.Backends)
	var errs []error
	for i := range n {
		be := b.Backends[(start+i)%n]
		if !slices.Contains(candidates, be) {
			continue
		}
		conn, err := (&net.Dialer{Timeout: b.Interval}).DialContext(ctx, "tcp", be)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		b.mu.Lock()
		if b.healthy[be] {
			b.Logf("backend %s is DOWN: %v", be, err)
		}
		b.healthy[be] = false
		b.mu.Unlock()
	}
	return nil, fmt.Errorf("no backend answered: %w", errors.Join(errs...))
}
