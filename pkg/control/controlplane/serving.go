package controlplane

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync/atomic"
	"time"
)

// servingCert is miniapi's serving certificate, re-issued from the cluster CA (whose key
// miniapi holds) once 80 % of its validity has passed, without a restart: the TLS
// listener asks for the current one at every handshake.
type servingCert struct {
	issue func() (tls.Certificate, error)
	cur   atomic.Pointer[tls.Certificate]
	log   *slog.Logger
	// retry is how soon a failed re-issue is tried again.
	retry time.Duration
}

func newServingCert(issue func() (tls.Certificate, error), log *slog.Logger) (*servingCert, error) {
	s := &servingCert{issue: issue, log: log, retry: 10 * time.Second}
	cert, err := issue()
	if err != nil {
		return nil, err
	}
	s.cur.Store(&cert)
	return s, nil
}

func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cur.Load(), nil }

// renewAt is when a certificate issued at issued should be replaced.
func renewAt(issued time.Time, cert *tls.Certificate) time.Time {
	return issued.Add(cert.Leaf.NotAfter.Sub(issued) * 8 / 10)
}

// run re-issues the certificate when due until ctx ends.
func (s *servingCert) run(ctx context.Context) {
	issued := time.Now()
	due := renewAt(issued, s.cur.Load())
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(due)):
		}
		cert, err := s.issue()
		if err != nil {
			s.log.Error("renewing the serving certificate failed; retrying", "err", err, "notAfter", s.cur.Load().Leaf.NotAfter)
			due = time.Now().Add(s.retry)
			continue
		}
		s.cur.Store(&cert)
		issued = time.Now()
		due = renewAt(issued, &cert)
		s.log.Info("serving certificate renewed", "notAfter", cert.Leaf.NotAfter.Format(time.RFC3339))
	}
}
