// Command netexec is the test server in localhost/minik8s/netexec:v1, modelled on the
// netexec mode of Kubernetes' agnhost. HTTP (--http-port, default 8080):
//
//	/hostname          the pod's host name
//	/clientip          the caller's ip:port as this server sees it
//	/echo?msg=TEXT     TEXT
//	/healthz           200 "ok" until /sethealth changes the code
//	/sethealth?code=N  makes /healthz answer N from now on
//	/exit?code=N       replies, then exits with status N
//
// gRPC (--grpc-port, default 8082, 0 disables): grpc.health.v1 Health, SERVING while
// /healthz answers 2xx or 3xx, NOT_SERVING otherwise.
//
// UDP (--udp-port, default 8081, 0 disables): "hostname" is answered with the host name,
// anything else is echoed back. Every request is logged to stdout. SIGTERM and SIGINT
// shut the server down gracefully with status 0.
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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	httpPort := flag.Int("http-port", 8080, "TCP port of the HTTP server")
	udpPort := flag.Int("udp-port", 8081, "UDP port of the echo server (0 disables it)")
	grpcPort := flag.Int("grpc-port", 8082, "TCP port of the gRPC health server (0 disables it)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if *udpPort != 0 {
		conn, err := net.ListenPacket("udp", fmt.Sprintf(":%d", *udpPort))
		if err != nil {
			log.Error("udp listen", "err", err)
			os.Exit(1)
		}
		go serveUDP(conn, log)
		context.AfterFunc(ctx, func() { conn.Close() })
	}

	s := &server{log: log, exit: make(chan int, 1), grpcHealth: health.NewServer()}
	s.setHealth(http.StatusOK)
	if *grpcPort != 0 {
		lis, err := net.Listen("tcp", fmt.Sprintf(":%d", *grpcPort))
		if err != nil {
			log.Error("grpc listen", "err", err)
			os.Exit(1)
		}
		g := grpc.NewServer()
		healthpb.RegisterHealthServer(g, s.grpcHealth)
		go g.Serve(lis)
		context.AfterFunc(ctx, g.Stop)
	}
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *httpPort), Handler: s.routes()}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ListenAndServe() }()
	log.Info("serving", "http", srv.Addr, "udp", *udpPort)

	code := 0
	select {
	case err := <-serveErr:
		log.Error("http server", "err", err)
		os.Exit(1)
	case <-ctx.Done():
		log.Info("shutting down on signal")
	case code = <-s.exit:
		log.Info("exiting on request", "code", code)
	}
	// Shutdown lets in-flight responses (the /exit reply among them) finish first.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	os.Exit(code)
}

type server struct {
	log        *slog.Logger
	health     atomic.Int32
	grpcHealth *health.Server
	exit       chan int
}

// setHealth sets what /healthz answers, and the gRPC health status to match.
func (s *server) setHealth(code int) {
	s.health.Store(int32(code))
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if code >= 200 && code < 400 {
		status = healthpb.HealthCheckResponse_SERVING
	}
	s.grpcHealth.SetServingStatus("", status)
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hostname", func(w http.ResponseWriter, _ *http.Request) {
		name, err := os.Hostname()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, name)
	})
	mux.HandleFunc("/clientip", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.RemoteAddr)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.URL.Query().Get("msg"))
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		code := int(s.health.Load())
		w.WriteHeader(code)
		if code == http.StatusOK {
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprintf(w, "unhealthy (%d)", code)
	})
	mux.HandleFunc("/sethealth", func(w http.ResponseWriter, r *http.Request) {
		code, ok := codeParam(w, r, 100, 599)
		if !ok {
			return
		}
		s.setHealth(code)
		fmt.Fprintf(w, "healthz now answers %d", code)
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, ok := codeParam(w, r, 0, 255)
		if !ok {
			return
		}
		fmt.Fprintf(w, "exiting with %d", code)
		select {
		case s.exit <- code:
		default: // an exit is already under way
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Info("request", "method", r.Method, "uri", r.RequestURI, "client", r.RemoteAddr)
		mux.ServeHTTP(w, r)
	})
}

// codeParam reads the "code" query parameter, answering 400 when it is missing or out of
// [low, high].
func codeParam(w http.ResponseWriter, r *http.Request, low, high int) (int, bool) {
	raw := r.URL.Query().Get("code")
	code, err := strconv.Atoi(raw)
	if err != nil || code < low || code > high {
		http.Error(w, fmt.Sprintf("query parameter code=%q must be an integer in [%d, %d]", raw, low, high), http.StatusBadRequest)
		return 0, false
	}
	return code, true
}

func serveUDP(conn net.PacketConn, log *slog.Logger) {
	buf := make([]byte, 64*1024)
	for {
		n, addr, err := conn.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Error("udp read", "err", err)
			}
			return
		}
		reply := buf[:n]
		if strings.TrimSpace(string(reply)) == "hostname" {
			name, _ := os.Hostname()
			reply = []byte(name)
		}
		log.Info("udp request", "client", addr.String(), "bytes", n)
		if _, err := conn.WriteTo(reply, addr); err != nil {
			log.Warn("udp reply", "client", addr.String(), "err", err)
		}
	}
}
