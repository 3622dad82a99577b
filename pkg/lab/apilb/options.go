package apilb

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	certutil "k8s.io/client-go/util/cert"
)

// Options are the balancer's flags, the same wherever it runs: `minilab apilb` in a lab,
// `miniproxy apilb` on a host (kubespray's "localhost load balancing": every node reaches
// the API servers through 127.0.0.1).
type Options struct {
	Listen   string
	Backends []string
	CAFile   string
}

// AddFlags registers the options' flags on f.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Listen, "listen", "", "address to listen on, IP:PORT")
	f.StringSliceVar(&o.Backends, "backend", nil, "an API server's address, IP:PORT (repeatable, or comma-separated)")
	f.StringVar(&o.CAFile, "ca-file", "", "CA of the API servers' certificates: check GET /readyz over TLS (empty: check that a TCP connection opens)")
}

// Balancer checks the options and returns the balancer they describe.
func (o *Options) Balancer() (*Balancer, error) {
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return nil, fmt.Errorf("--listen %q: %w", o.Listen, err)
	}
	if len(o.Backends) == 0 {
		return nil, fmt.Errorf("--backend: name at least one API server")
	}
	for _, be := range o.Backends {
		if _, _, err := net.SplitHostPort(be); err != nil {
			return nil, fmt.Errorf("--backend %q: %w", be, err)
		}
	}
	b := &Balancer{Backends: o.Backends}
	if o.CAFile != "" {
		ca, err := certutil.NewPool(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		b.Check = ReadyzCheck(ca)
	}
	return b, nil
}

// Run listens on --listen and balances its connections until ctx ends; b comes from
// Balancer (its Logf and Ready set by the caller).
func (o *Options) Run(ctx context.Context, b *Balancer) error {
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	return b.Serve(ctx, ln)
}
