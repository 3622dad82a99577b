// Command netexec is the test server in localhost/minik8s/netexec:v1 and behind `agnhost
// netexec` in the conformance suite's agnhost image (docs/conformance.md). It keeps the
// flags, endpoints and reply formats of Kubernetes' agnhost netexec (v1.36):
//
// HTTP, or HTTPS with --tls-cert-file/--tls-private-key-file (--http-port, default 8080):
//
//	/                  "NOW: <time>"
//	/hostname, /hostName  the pod's host name
//	/clientip          the caller's ip:port as this server sees it
//	/serverport        the HTTP port
//	/header?key=K      the value of request header K; without key, every header as JSON
//	/echo?msg=TEXT&code=N  TEXT, with status N if given
//	/redirect?location=URL&code=N  a redirect (302 unless N)
//	/dial?host=H&port=P&request=R&protocol=http|udp&tries=N
//	                   sends R N times (HTTP GET http://H:P/R, or R as one UDP datagram)
//	                   and answers {"responses":[...],"errors":[...]}
//	/shell?cmd=C       runs sh -c C: {"output":...,"error":...}
//	/upload            stores the multipart "file" under /uploads: {"output":"<path>"}
//	/healthz           200 once the UDP server listens, else 412; /sethealth changes the code
//	/readyz            200 "ok", 412 before the UDP server listens, 503 after SIGTERM
//	/sethealth?code=N  makes /healthz answer N from now on (ours, for probe tests)
//	/exit?code=N&timeout=D&wait=D  exits with N after waiting D, allowing D for shutdown
//	/shutdown          exits with 0
//
// --http-override=PATH answers every request as a GET of PATH.
//
// UDP (--udp-port, default 8081, -1 or 0 disables; --udp-listen-addresses limits the
// addresses): "hostname", "echo MSG", "clientip" and "serverport" are answered, other
// datagrams are only logged. SCTP (--sctp-port) is not served.
//
// gRPC (--grpc-port, default 8082, 0 disables; ours): grpc.health.v1 Health, SERVING while
// /healthz answers 2xx or 3xx. SIGTERM marks /readyz 503, waits --delay-shutdown seconds
// and exits 0 after a graceful shutdown; SIGINT shuts down at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	httpPort := flag.Int("http-port", 8080, "TCP port of the HTTP server")
	udpPort := flag.Int("udp-port", 8081, "UDP port of the UDP server (-1 or 0 disables it)")
	sctpPort := flag.Int("sctp-port", -1, "SCTP port (only -1, disabled, is supported)")
	grpcPort := flag.Int("grpc-port", 8082, "TCP port of the gRPC health server (0 disables it)")
	certFile := flag.String("tls-cert-file", "", "certificate (PEM) for HTTPS instead of HTTP")
	keyFile := flag.String("tls-private-key-file", "", "private key (PEM) matching --tls-cert-file")
	override := flag.String("http-override", "", "answer every HTTP request as a GET of this path and query")
	udpAddrs := flag.String("udp-listen-addresses", "", "comma-separated IPs the UDP server listens on (default: all)")
	delayShutdown := flag.Int("delay-shutdown", 0, "seconds to keep serving after SIGTERM")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	fail := func(msg string, err error) {
		log.Error(msg, "err", err)
		os.Exit(1)
	}
	if *sctpPort != -1 {
		fail("sctp", errors.New("SCTP is not served by this netexec (docs/conformance.md)"))
	}

	s := newServer(log, *httpPort)
	handler := s.routes()
	if *override != "" {
		handler = overrideHandler(*override, handler)
	}

	if *udpPort > 0 {
		addrs, err := parseAddresses(*udpAddrs)
		if err != nil {
			fail("--udp-listen-addresses", err)
		}
		for _, addr := range addrs {
			conn, err := net.ListenPacket("udp", net.JoinHostPort(addr, strconv.Itoa(*udpPort)))
			if err != nil {
				fail("udp listen", err)
			}
			go serveUDP(conn, *udpPort, log)
		}
	}
	// Upstream turns ready when its UDP server listens; without one, at once.
	s.ready.Store(true)

	if *grpcPort != 0 {
		lis, err := net.Listen("tcp", fmt.Sprintf(":%d", *grpcPort))
		if err != nil {
			fail("grpc listen", err)
		}
		g := grpc.NewServer()
		healthpb.RegisterHealthServer(g, s.grpcHealth)
		go g.Serve(lis)
		defer g.Stop()
	}

	srv := &http.Server{Addr: fmt.Sprintf(":%d", *httpPort), Handler: handler}
	serveErr := make(chan error, 1)
	go func() {
		if *certFile != "" {
			serveErr <- srv.ListenAndServeTLS(*certFile, *keyFile)
			return
		}
		serveErr <- srv.ListenAndServe()
	}()
	log.Info("serving", "http", srv.Addr, "udp", *udpPort, "tls", *certFile != "")

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	req := shutdownRequest{timeout: 5 * time.Second}
	select {
	case err := <-serveErr:
		fail("http server", err)
	case sig := <-signals:
		log.Info("shutting down on signal", "signal", sig)
		if sig == syscall.SIGTERM {
			s.terminating.Store(true)
			if *delayShutdown > 0 {
				log.Info("delaying shutdown", "seconds", *delayShutdown)
				time.Sleep(time.Duration(*delayShutdown) * time.Second)
			}
		}
	case req = <-s.exit:
		log.Info("exiting on request", "code", req.code, "timeout", req.timeout)
	}
	// Shutdown lets in-flight responses finish for at most the timeout.
	ctx, cancel := context.WithTimeout(context.Background(), req.timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	os.Exit(req.code)
}

// shutdownRequest is an exit asked for over HTTP: the status and how long in-flight
// requests may take.
type shutdownRequest struct {
	code    int
	timeout time.Duration
}

func newServer(log *slog.Logger, httpPort int) *server {
	s := &server{log: log, httpPort: httpPort, exit: make(chan shutdownRequest, 1),
		grpcHealth: health.NewServer(), shell: "/bin/sh", uploadDir: "/uploads"}
	s.setHealth(http.StatusOK)
	return s
}

// parseAddresses is the sorted set of IPs of a comma-separated list; "" is every address.
func parseAddresses(list string) ([]string, error) {
	if list == "" {
		return []string{""}, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, a := range strings.Split(list, ",") {
		if net.ParseIP(a) == nil {
			return nil, fmt.Errorf("invalid address %q", a)
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}
