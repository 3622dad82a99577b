package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// guestbookCommand is the Kubectl Guestbook test's application, one program in three
// roles: the frontend (--backend-port 6379) turns /guestbook?cmd=set|get into /set on
// the agnhost-primary Service or /get on agnhost-replica; the primary keeps the store
// and pushes every /set to the replicas that registered; a replica (--replicaof
// agnhost-primary) registers at start and copies the primary's store.
func guestbookCommand() *cobra.Command {
	httpPort, replicaOf := "80", ""
	g := newGuestbook("6379")
	cmd := &cobra.Command{
		Use:   "guestbook",
		Short: "Serves a guestbook: its frontend, primary store or replica store",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			l, err := net.Listen("tcp", net.JoinHostPort("", httpPort))
			if err != nil {
				return err
			}
			if replicaOf != "" {
				go func() {
					if err := g.register(replicaOf, 15*time.Second); err != nil {
						log.Fatal(err)
					}
				}()
			}
			return http.Serve(l, g.routes())
		},
	}
	cmd.Flags().StringVar(&httpPort, "http-port", httpPort, "HTTP listen port")
	cmd.Flags().StringVar(&g.backendPort, "backend-port", g.backendPort, "the port of the primary and replicas (the frontend's backends, the primary's replicas)")
	cmd.Flags().StringVar(&replicaOf, "replicaof", "", "the primary's host name to register to (a replica)")
	return cmd
}

type guestbook struct {
	backendPort string
	// primary and replica are the host names the frontend sends set and get to: the
	// Services of the test's manifests.
	primary, replica string
	client           *http.Client

	mu       sync.Mutex
	store    map[string]any
	replicas []string // the hosts /set pushes to, on backendPort
}

func newGuestbook(backendPort string) *guestbook {
	return &guestbook{backendPort: backendPort, primary: "agnhost-primary", replica: "agnhost-replica",
		client: &http.Client{Timeout: 5 * time.Second}, store: map[string]any{}}
}

func (g *guestbook) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/register", g.serveRegister)
	mux.HandleFunc("/get", g.serveGet)
	mux.HandleFunc("/set", g.serveSet)
	mux.HandleFunc("/guestbook", g.serveGuestbook)
	return mux
}

// register subscribes this replica to primary, giving the address it reaches primary
// from, and takes the primary's store; it retries until timeout, as the primary's
// Service may not answer yet.
func (g *guestbook) register(primary string, timeout time.Duration) error {
	hostPort := net.JoinHostPort(primary, g.backendPort)
	var err error
	for start := time.Now(); time.Since(start) < timeout; time.Sleep(time.Second) {
		var self net.IP
		if self, err = localIPTowards(hostPort); err != nil {
			log.Printf("unable to get IP towards %s: %v; retrying", hostPort, err)
			continue
		}
		var body []byte
		if body, _, err = g.call(hostPort, "register", url.Values{"host": {self.String()}}); err != nil {
			log.Printf("registering to primary %s: %v; retrying", hostPort, err)
			continue
		}
		var answer struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return fmt.Errorf("the primary's answer %q: %v", body, err)
		}
		g.mu.Lock()
		g.store = answer.Data
		if g.store == nil {
			g.store = map[string]any{}
		}
		g.mu.Unlock()
		log.Printf("Registered to node: %s", primary)
		return nil
	}
	return fmt.Errorf("timed out while registering to primary %s: %v", hostPort, err)
}

// localIPTowards is the source address the kernel picks for hostPort: the pod's IP.
func localIPTowards(hostPort string) (net.IP, error) {
	conn, err := net.Dial("udp", hostPort)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP, nil
}

// serveRegister adds the caller's host to the replicas and answers the whole store.
func (g *guestbook) serveRegister(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Query().Get("host")
	g.mu.Lock()
	defer g.mu.Unlock()
	writeJSON(w, map[string]any{"data": g.store})
	g.replicas = append(g.replicas, host)
	log.Printf("Node '%s' registered.", host)
}

// serveGet answers {"data": value} of the key, or of the whole store without one.
func (g *guestbook) serveGet(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	g.mu.Lock()
	defer g.mu.Unlock()
	if key == "" {
		writeJSON(w, map[string]any{"data": g.store})
		return
	}
	value, ok := g.store[key]
	if !ok {
		value = ""
	}
	writeJSON(w, map[string]any{"data": value})
}

// serveSet stores the key's value and pushes it to every replica before answering.
func (g *guestbook) serveSet(w http.ResponseWriter, r *http.Request) {
	key, value := r.URL.Query().Get("key"), r.URL.Query().Get("value")
	if key == "" {
		http.Error(w, "cannot set with empty key.", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.store[key] = value
	replicas := append([]string(nil), g.replicas...)
	g.mu.Unlock()
	for _, replica := range replicas {
		if _, _, err := g.call(net.JoinHostPort(replica, g.backendPort), "set", url.Values{"key": {key}, "value": {value}}); err != nil {
			http.Error(w, fmt.Sprintf("encountered error while propagating to replica '%s': %v", replica, err), http.StatusExpectationFailed)
			return
		}
	}
	writeJSON(w, map[string]string{"message": "Updated"})
}

// serveGuestbook is the frontend: set goes to the primary, get to a replica, and their
// answer comes back as it is.
func (g *guestbook) serveGuestbook(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cmd, key := strings.ToLower(q.Get("cmd")), q.Get("key")
	host := g.replica
	switch {
	case cmd == "set" && key == "":
		http.Error(w, "cannot set with empty key.", http.StatusBadRequest)
		return
	case cmd == "set":
		host = g.primary
	case cmd != "get":
		http.Error(w, fmt.Sprintf("unsupported cmd: '%s'", cmd), http.StatusBadRequest)
		return
	}
	body, status, err := g.call(net.JoinHostPort(host, g.backendPort), cmd, url.Values{"key": {key}, "value": {q.Get("value")}})
	if err != nil {
		http.Error(w, fmt.Sprintf("encountered error: %v", err), http.StatusExpectationFailed)
		return
	}
	w.WriteHeader(status)
	w.Write(body)
}

// call GETs http://hostPort/path?query and returns the body and status.
func (g *guestbook) call(hostPort, path string, query url.Values) ([]byte, int, error) {
	resp, err := g.client.Get((&url.URL{Scheme: "http", Host: hostPort, Path: "/" + path, RawQuery: query.Encode()}).String())
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return body, resp.StatusCode, err
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("response could not be serialized. %v", err), http.StatusExpectationFailed)
		return
	}
	w.Write(body)
}
