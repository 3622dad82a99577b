package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// testWebserverCommand serves the container's file system over HTTP (the StatefulSet
// tests probe /localhost.crt on port 80).
func testWebserverCommand() *cobra.Command {
	port := 80
	cmd := &cobra.Command{
		Use:   "test-webserver",
		Short: "Serves any file of the container named by the URL path",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			files := http.FileServer(http.Dir("/"))
			return http.ListenAndServe(fmt.Sprintf(":%d", port), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "private")
				r.Header.Del("If-Modified-Since") // never a 304: tests compare bodies
				files.ServeHTTP(w, r)
			}))
		},
	}
	cmd.Flags().IntVar(&port, "port", port, "port number")
	return cmd
}

// serveHostnameCommand answers every request with the pod's host name over HTTP, or raw
// over TCP and/or UDP; after SIGTERM it keeps serving 60 s while the pod is deleted.
func serveHostnameCommand() *cobra.Command {
	var tcp, udp, close bool
	doHTTP, port := true, 9376
	cmd := &cobra.Command{
		Use:   "serve-hostname",
		Short: "Serves the host name over HTTP, TCP or UDP",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if doHTTP && (tcp || udp) {
				return fmt.Errorf("--http cannot be combined with --tcp or --udp (pass --http=false)")
			}
			hostname, err := os.Hostname()
			if err != nil {
				return err
			}
			addr := fmt.Sprintf(":%d", port)
			if tcp {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					return err
				}
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							log.Fatalf("accept: %v", err)
						}
						c.Write([]byte(hostname))
						c.Close()
					}
				}()
			}
			if udp {
				conn, err := net.ListenPacket("udp", addr)
				if err != nil {
					return err
				}
				go answerUDP(conn, []byte(hostname))
			}
			if doHTTP {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					return err
				}
				go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if close {
						w.Header().Set("Connection", "close")
					}
					fmt.Fprint(w, hostname)
				}))
			}
			log.Printf("Serving on port %d.", port)
			signals := make(chan os.Signal, 1)
			signal.Notify(signals, syscall.SIGTERM)
			log.Printf("Shutting down after receiving signal: %s.", <-signals)
			time.Sleep(60 * time.Second)
			return nil
		},
	}
	cmd.Flags().BoolVar(&tcp, "tcp", false, "serve raw over TCP")
	cmd.Flags().BoolVar(&udp, "udp", false, "serve raw over UDP")
	cmd.Flags().BoolVar(&doHTTP, "http", doHTTP, "serve HTTP")
	cmd.Flags().BoolVar(&close, "close", false, "close the connection after each HTTP request")
	cmd.Flags().IntVar(&port, "port", port, "port number")
	return cmd
}

// answerUDP replies to every datagram with reply.
func answerUDP(conn net.PacketConn, reply []byte) {
	buf := make([]byte, 64)
	for {
		_, from, err := conn.ReadFrom(buf)
		if err != nil {
			log.Printf("udp: %v", err)
			return
		}
		conn.WriteTo(reply, from)
	}
}

// livenessCommand is healthy for its first 10 s, then answers /healthz with 500 (the
// liveness-probe restart tests), on port 8080.
func livenessCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "liveness",
		Short: "Serves /healthz: 200 for 10 seconds, then 500",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			started := time.Now()
			mux := http.NewServeMux()
			mux.HandleFunc("/started", func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, time.Since(started).String())
			})
			mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
				if d := time.Since(started); d > 10*time.Second {
					w.WriteHeader(http.StatusInternalServerError)
					fmt.Fprintf(w, "error: %v", d.Seconds())
					return
				}
				fmt.Fprint(w, "ok")
			})
			mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, r.URL.Query().Get("loc"), http.StatusFound)
			})
			return http.ListenAndServe(":8080", mux)
		},
	}
}

// porterCommand serves the value of each SERVE_PORT_N / SERVE_TCP_PORT_N (HTTP) and
// SERVE_UDP_PORT_N variable on port N, and over HTTPS for SERVE_TLS_PORT_N.
func porterCommand() *cobra.Command {
	var jsonResponse bool
	cmd := &cobra.Command{
		Use:   "porter",
		Short: "Serves the values of SERVE_PORT_N variables on port N",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			for _, kv := range os.Environ() {
				key, value, _ := strings.Cut(kv, "=")
				switch {
				case strings.HasPrefix(key, "SERVE_PORT_"):
					go servePorterHTTP(strings.TrimPrefix(key, "SERVE_PORT_"), value, jsonResponse)
				case strings.HasPrefix(key, "SERVE_TCP_PORT_"):
					go servePorterHTTP(strings.TrimPrefix(key, "SERVE_TCP_PORT_"), value, jsonResponse)
				case strings.HasPrefix(key, "SERVE_UDP_PORT_"):
					conn, err := net.ListenPacket("udp", ":"+strings.TrimPrefix(key, "SERVE_UDP_PORT_"))
					if err != nil {
						return fmt.Errorf("%s: %w", key, err)
					}
					go answerUDP(conn, []byte(value))
				case strings.HasPrefix(key, "SERVE_TLS_PORT_"):
					go servePorterTLS(strings.TrimPrefix(key, "SERVE_TLS_PORT_"), value, jsonResponse)
				case strings.HasPrefix(key, "SERVE_SCTP_PORT_"):
					return fmt.Errorf("%s: SCTP ports are not served by this agnhost (docs/conformance.md)", key)
				}
			}
			select {}
		},
	}
	cmd.Flags().BoolVar(&jsonResponse, "json-response", false, `answer {"Method": ..., "Body": value} instead of the bare value`)
	return cmd
}

func servePorterHTTP(port, value string, jsonResponse bool) {
	err := http.ListenAndServe(":"+port, porterHandler(value, jsonResponse))
	log.Printf("server on port %q failed: %v", port, err)
}

// servePorterTLS serves HTTPS with CERT_FILE and KEY_FILE, by default the image's
// localhost.crt and localhost.key (relative to the working directory, as upstream).
func servePorterTLS(port, value string, jsonResponse bool) {
	cert, key := cmp.Or(os.Getenv("CERT_FILE"), "localhost.crt"), cmp.Or(os.Getenv("KEY_FILE"), "localhost.key")
	err := http.ListenAndServeTLS(":"+port, cert, key, porterHandler(value, jsonResponse))
	log.Printf("tls server on port %q with certFile=%q, keyFile=%q failed: %v", port, cert, key, err)
}

func porterHandler(value string, jsonResponse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !jsonResponse {
			fmt.Fprint(w, value)
			return
		}
		body, _ := json.Marshal(struct{ Method, Body string }{r.Method, value})
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}
