// Package nodeapi is minilet's node API, the kubelet's HTTPS server on port 10250: the API
// server reaches it for `kubectl logs` (/containerLogs). Clients must present a
// certificate signed by the cluster CA; anonymous requests are refused.
package nodeapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// Logs finds container logs for the server.
type Logs interface {
	// ContainerLog is the log file of a container (of its previous instance when previous
	// is set) and a func telling whether that instance still runs. Errors say what is
	// wrong in words for the user (no such pod, container, or previous instance).
	ContainerLog(namespace, pod, container string, previous bool) (path string, running func() bool, err error)
}

// ErrNotFound marks a pod or container the node does not know.
var ErrNotFound = errors.New("not found")

// Config says where and how to serve.
type Config struct {
	Address      string // host:port (--port on the node IP)
	CertFile     string // --tls-cert-file
	KeyFile      string // --tls-private-key-file
	ClientCAFile string // --client-ca-file
}

// Serve runs the node API until ctx ends; it returns once listening or on a setup error.
func Serve(ctx context.Context, cfg Config, logs Logs, log *slog.Logger) error {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("node API certificate (--tls-cert-file, --tls-private-key-file): %w", err)
	}
	caPEM, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("node API client CA (--client-ca-file): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("node API client CA (--client-ca-file) %s holds no PEM certificate", cfg.ClientCAFile)
	}
	l, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("node API: listen on %s: %w", cfg.Address, err)
	}
	srv := &http.Server{
		Handler:           Handler(logs),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("node API stopped", "err", err)
		}
	}()
	log.Info("serving the node API", "address", cfg.Address)
	return nil
}

// Handler serves the node API's endpoints (without TLS, for tests of the handler itself).
func Handler(logs Logs) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		serveLogs(w, r, logs)
	})
	return mux
}

// logOptions are the kubelet's /containerLogs parameters this node honours.
type logOptions struct {
	follow, previous bool
	tailLines        int64 // -1: all
	limitBytes       int64 // 0: no limit
}

func parseLogOptions(q map[string][]string) (logOptions, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	o := logOptions{follow: get("follow") == "true", previous: get("previous") == "true", tailLines: -1}
	for _, k := range []string{"timestamps", "sinceSeconds", "sinceTime"} {
		if v := get(k); v != "" && v != "false" {
			// The runtime writes plain output, with no time per line to filter or show.
			return o, fmt.Errorf("%s is not supported: this node's container logs record no timestamps", k)
		}
	}
	for k, dst := range map[string]*int64{"tailLines": &o.tailLines, "limitBytes": &o.limitBytes} {
		if v := get(k); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return o, fmt.Errorf("%s=%q must be a non-negative integer", k, v)
			}
			*dst = n
		}
	}
	return o, nil
}

func serveLogs(w http.ResponseWriter, r *http.Request, logs Logs) {
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, running, err := logs.ContainerLog(r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), opts.previous)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, fmt.Sprintf("open the container's log: %v", err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	out := io.Writer(w)
	if opts.limitBytes > 0 {
		out = &limitWriter{w: w, left: opts.limitBytes}
	}
	if err := seekTail(f, opts.tailLines); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	follow(r.Context(), f, out, w, opts.follow && running != nil, running)
}

// seekTail positions f at the start of its last n lines (n < 0: at the start).
func seekTail(f *os.File, n int64) error {
	if n < 0 {
		return nil
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	const chunk = 32 << 10
	pos, lines := end, int64(0)
	buf := make([]byte, chunk)
	for pos > 0 {
		size := min(int64(chunk), pos)
		pos -= size
		if _, err := f.ReadAt(buf[:size], pos); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		block := buf[:size]
		for i := len(block) - 1; i >= 0; i-- {
			if block[i] != '\n' || pos+int64(i) == end-1 { // the final newline ends the last line
				continue
			}
			if lines++; lines == n {
				_, err := f.Seek(pos+int64(i)+1, io.SeekStart)
				return err
			}
		}
	}
	if n == 0 {
		_, err = f.Seek(0, io.SeekEnd)
		return err
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// follow copies f to out; with keepGoing it then waits for more until the container
// instance stops running or the client goes away.
func follow(ctx context.Context, f *os.File, out io.Writer, w http.ResponseWriter, keepGoing bool, running func() bool) {
	flusher, _ := w.(http.Flusher)
	rd := bufio.NewReader(f)
	for {
		if _, err := io.Copy(out, rd); err != nil {
			return // the client left, or the byte limit is reached
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !keepGoing {
			return
		}
		if !running() {
			_, _ = io.Copy(out, rd) // what was written before it stopped
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// limitWriter stops after left bytes (limitBytes), ending the copy with an error.
type limitWriter struct {
	w    io.Writer
	left int64
}

var errLimit = errors.New("limitBytes reached")

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimit
	}
	cut := p
	if int64(len(cut)) > l.left {
		cut = cut[:l.left]
	}
	n, err := l.w.Write(cut)
	l.left -= int64(n)
	if err == nil && len(cut) < len(p) {
		err = errLimit
	}
	return n, err
}
