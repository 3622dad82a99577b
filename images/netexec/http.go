package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type server struct {
	log         *slog.Logger
	httpPort    int
	health      atomic.Int32 // what /healthz answers once ready (/sethealth)
	ready       atomic.Bool  // the UDP server listens
	terminating atomic.Bool  // SIGTERM arrived
	grpcHealth  *health.Server
	exit        chan shutdownRequest
	shell       string
	uploadDir   string
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
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "NOW: %v", time.Now())
	})
	hostname := func(w http.ResponseWriter, _ *http.Request) {
		name, err := os.Hostname()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, name)
	}
	mux.HandleFunc("/hostname", hostname)
	mux.HandleFunc("/hostName", hostname)
	mux.HandleFunc("/clientip", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.RemoteAddr)
	})
	mux.HandleFunc("/serverport", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, s.httpPort)
	})
	mux.HandleFunc("/header", func(w http.ResponseWriter, r *http.Request) {
		if key := r.FormValue("key"); key != "" {
			fmt.Fprint(w, r.Header.Get(key))
			return
		}
		data, _ := json.Marshal(r.Header)
		w.Write(data)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		// Upstream's line, which the lifecycle hook tests look for in the log.
		log.Printf("GET /echo?msg=%s&code=%s", r.FormValue("msg"), r.FormValue("code"))
		if raw := r.FormValue("code"); raw != "" {
			code, err := strconv.Atoi(raw)
			if err != nil {
				fmt.Fprintf(w, "argument 'code' must be an integer or empty, got %q\n", raw)
				return
			}
			w.WriteHeader(code)
		}
		fmt.Fprint(w, r.FormValue("msg"))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusFound
		if raw := r.FormValue("code"); raw != "" {
			var err error
			if code, err = strconv.Atoi(raw); err != nil {
				fmt.Fprintf(w, "argument 'code' must be an integer or empty, got %q\n", raw)
				return
			}
		}
		http.Redirect(w, r, r.FormValue("location"), code)
	})
	mux.HandleFunc("/dial", dialHandler)
	mux.HandleFunc("/shell", s.shellHandler)
	mux.HandleFunc("/upload", s.uploadHandler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		code := int(s.health.Load())
		w.WriteHeader(code)
		if code == http.StatusOK {
			fmt.Fprint(w, "ok")
			return
		}
		fmt.Fprintf(w, "unhealthy (%d)", code)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case s.terminating.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, "shutting down")
		case s.ready.Load():
			fmt.Fprint(w, "ok")
		default:
			w.WriteHeader(http.StatusPreconditionFailed)
		}
	})
	mux.HandleFunc("/sethealth", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.FormValue("code"))
		if err != nil || code < 100 || code > 599 {
			http.Error(w, fmt.Sprintf("query parameter code=%q must be an integer in [100, 599]", r.FormValue("code")), http.StatusBadRequest)
			return
		}
		s.setHealth(code)
		fmt.Fprintf(w, "healthz now answers %d", code)
	})
	mux.HandleFunc("/exit", s.exitHandler)
	mux.HandleFunc("/shutdown", func(w http.ResponseWriter, _ *http.Request) {
		s.requestExit(w, shutdownRequest{})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Info("request", "method", r.Method, "uri", r.RequestURI, "client", r.RemoteAddr)
		mux.ServeHTTP(w, r)
	})
}

// overrideHandler serves every request as a GET of path (--http-override).
func overrideHandler(path string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
		if err != nil {
			http.Error(w, fmt.Sprintf("override request failed: %v", err), http.StatusInternalServerError)
			return
		}
		req.RemoteAddr, req.RequestURI = r.RemoteAddr, path
		next.ServeHTTP(w, req)
	})
}

// exitHandler: /exit?code=N&timeout=D&wait=D. Unlike upstream, a code outside [0, 255]
// is refused with 400 rather than wrapped by the kernel.
func (s *server) exitHandler(w http.ResponseWriter, r *http.Request) {
	var req shutdownRequest
	var wait time.Duration
	var err error
	if raw := r.FormValue("timeout"); raw != "" {
		if req.timeout, err = time.ParseDuration(raw); err != nil {
			http.Error(w, fmt.Sprintf("argument 'timeout' must be a valid golang duration or empty, got %q", raw), http.StatusBadRequest)
			return
		}
	}
	if raw := r.FormValue("wait"); raw != "" {
		if wait, err = time.ParseDuration(raw); err != nil {
			http.Error(w, fmt.Sprintf("argument 'wait' must be a valid golang duration or empty, got %q", raw), http.StatusBadRequest)
			return
		}
	}
	if raw := r.FormValue("code"); raw != "" {
		if req.code, err = strconv.Atoi(raw); err != nil || req.code < 0 || req.code > 255 {
			http.Error(w, fmt.Sprintf("argument 'code' must be an integer [0-255] or empty, got %q", raw), http.StatusBadRequest)
			return
		}
	}
	time.Sleep(wait)
	s.requestExit(w, req)
}

// requestExit replies, flushes the reply, then asks main to exit. The reply carries its
// length: a flushed chunked reply still lacks its last chunk, which the handler writes only
// on return, and main may exit before that.
func (s *server) requestExit(w http.ResponseWriter, req shutdownRequest) {
	reply := fmt.Sprintf("exiting with %d", req.code)
	w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
	io.WriteString(w, reply)
	http.NewResponseController(w).Flush()
	select {
	case s.exit <- req:
	default: // an exit is already under way
	}
}

// shellHandler runs cmd (or shellCommand) with sh -c and answers its combined output and
// error as JSON, with 200 either way as upstream does.
func (s *server) shellHandler(w http.ResponseWriter, r *http.Request) {
	cmd := r.FormValue("shellCommand")
	if cmd == "" {
		cmd = r.FormValue("cmd")
	}
	out, err := exec.CommandContext(r.Context(), s.shell, "-c", cmd).CombinedOutput()
	result := map[string]string{}
	if len(out) > 0 {
		result["output"] = string(out)
	}
	if err != nil {
		result["error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, result)
}

// uploadHandler stores the multipart form's "file" as a new file of uploadDir.
func (s *server) uploadHandler(w http.ResponseWriter, r *http.Request) {
	fail := func(msg string, err error) {
		s.log.Warn("upload", "err", err)
		writeJSON(w, http.StatusOK, map[string]string{"error": msg})
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		fail("Unable to upload file.", err)
		return
	}
	defer file.Close()
	f, err := os.CreateTemp(s.uploadDir, "upload")
	if err != nil {
		fail("Unable to open file for write", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, file); err != nil {
		fail("Unable to write file.", err)
		return
	}
	if err := f.Chmod(0o700); err != nil {
		fail("Unable to chmod file.", err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"output": f.Name()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("response could not be serialized. %v", err), http.StatusExpectationFailed)
		return
	}
	w.WriteHeader(code)
	w.Write(data)
}
