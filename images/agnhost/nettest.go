package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
)

// nettestCommand serves upstream agnhost nettest's endpoints on --port: /write counts
// each posted {"Source": S} under Received[S] (the PreStop conformance test's hook posts
// there and reads the count back from /read), /read answers the whole state as JSON,
// /status says pass, running or fail, /quit exits. Meanwhile it posts to the /write of
// every ready endpoint of --service in --namespace, found through the API server, and
// passes once it has reached and heard from --peers of them.
func nettestCommand() *cobra.Command {
	var port, peers, delayShutdown int
	var service, namespace string
	cmd := &cobra.Command{
		Use:   "nettest",
		Short: "Serves /read, /write, /status and /quit for connectivity tests between the endpoints of --service",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if service == "" {
				return fmt.Errorf("--service must not be empty")
			}
			hostname, err := os.Hostname()
			if err != nil {
				return err
			}
			if delayShutdown > 0 {
				terms := make(chan os.Signal, 1)
				signal.Notify(terms, syscall.SIGTERM)
				go func() {
					<-terms
					log.Printf("Sleeping %d seconds before exit ...", delayShutdown)
					time.Sleep(time.Duration(delayShutdown) * time.Second)
					os.Exit(0)
				}()
			}
			state := newNettestState(hostname, peers)
			go func() {
				// Upstream exits when it cannot reach the API server; the endpoints that
				// the other tests use (/write, /read) stay up here, and /status says fail.
				api, err := inClusterPeerAPI(namespace, service)
				if err != nil {
					state.logf("%v", err)
					state.doneContactingPeers()
					return
				}
				state.contactPeers(context.Background(), api, upstreamPeerTiming(peers))
			}()
			mux := state.mux()
			mux.HandleFunc("/quit", func(http.ResponseWriter, *http.Request) { os.Exit(0) })
			return http.ListenAndServe(fmt.Sprintf(":%d", port), mux)
		},
	}
	cmd.Flags().IntVar(&port, "port", 8080, "port to serve on")
	cmd.Flags().IntVar(&peers, "peers", 8, "peers to reach and hear from before /status says pass")
	cmd.Flags().StringVar(&service, "service", "nettest", "service whose endpoints are the peers")
	cmd.Flags().StringVar(&namespace, "namespace", "default", "namespace of --service")
	cmd.Flags().IntVar(&delayShutdown, "delay-shutdown", 0, "seconds to keep serving after SIGTERM")
	return cmd
}

// nettestState is what /read answers, field for field as upstream's State (the PreStop
// test decodes Received from it).
type nettestState struct {
	Hostname             string
	Sent                 map[string]int // by the host name a peer's /write answered with
	Received             map[string]int // by the Source posted to our /write
	Errors               []string
	Log                  []string
	StillContactingPeers bool

	mu    sync.Mutex
	peers int
}

// maxLogLines bounds Log, as upstream's 500.
const maxLogLines = 500

func newNettestState(hostname string, peers int) *nettestState {
	return &nettestState{Hostname: hostname, StillContactingPeers: true, peers: peers}
}

// nettestWrite is the body of a /write request; nettestWritten its answer.
type nettestWrite struct {
	Source string
	Dest   string
}

type nettestWritten struct {
	Hostname string
}

func (s *nettestState) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/read", s.serveRead)
	mux.HandleFunc("/write", s.serveWrite)
	mux.HandleFunc("/status", s.serveStatus)
	return mux
}

func (s *nettestState) serveRead(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	body, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		s.Errors = append(s.Errors, err.Error())
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(body)
}

// serveWrite answers 200 whatever the body, as upstream; a body it cannot use is
// recorded in Errors, where /read shows it.
func (s *nettestState) serveWrite(w http.ResponseWriter, r *http.Request) {
	var write nettestWrite
	err := json.NewDecoder(r.Body).Decode(&write)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.Errors = append(s.Errors, fmt.Sprintf("decoding a /write body: %v", err))
	case write.Source == "":
		s.Errors = append(s.Errors, fmt.Sprintf("%s: Got request with no source", s.Hostname))
	default:
		if s.Received == nil {
			s.Received = map[string]int{}
		}
		s.Received[write.Source]++
	}
	json.NewEncoder(w).Encode(nettestWritten{Hostname: s.Hostname})
}

func (s *nettestState) serveStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.Sent) >= s.peers && len(s.Received) >= s.peers:
		fmt.Fprint(w, "pass")
	case s.StillContactingPeers:
		fmt.Fprint(w, "running")
	default:
		s.appendLog(fmt.Sprintf("Declaring failure with %d sent and %d received and %d peers", len(s.Sent), len(s.Received), s.peers))
		fmt.Fprint(w, "fail")
	}
}

func (s *nettestState) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLog(fmt.Sprintf(format, args...))
}

// appendLog adds line to Log; s.mu must be held.
func (s *nettestState) appendLog(line string) {
	log.Print(line)
	s.Log = append(s.Log, line)
	if len(s.Log) > maxLogLines {
		s.Log = s.Log[len(s.Log)-maxLogLines:]
	}
}

func (s *nettestState) doneContactingPeers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.StillContactingPeers = false
}

func (s *nettestState) sent(hostname string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Sent == nil {
		s.Sent = map[string]int{}
	}
	s.Sent[hostname]++
}

// peerTiming paces contactPeers: how long to wait for the API server and for enough
// peers, how often to look, and how many rounds of posts to make.
type peerTiming struct {
	interval, timeout time.Duration
	rounds            int
}

// upstreamPeerTiming is upstream's pacing: every 5 s (slower for many peers, to spare the
// API server), for at most 5 minutes, then 15 rounds in case endpoints come late.
func upstreamPeerTiming(peers int) peerTiming {
	return peerTiming{
		interval: max(5*time.Second, time.Duration(peers/10)*time.Second),
		timeout:  max(5*time.Minute, time.Duration(peers)*time.Second),
		rounds:   15,
	}
}

// contactPeers waits for the API server, then for at least s.peers endpoints, then
// posts to every endpoint's /write each round.
func (s *nettestState) contactPeers(ctx context.Context, api *peerAPI, timing peerTiming) {
	defer s.doneContactingPeers()
	poll := func(done func() bool) bool {
		deadline := time.Now().Add(timing.timeout)
		for !done() {
			if time.Now().After(deadline) {
				return false
			}
			select {
			case <-ctx.Done():
				return false
			case <-time.After(timing.interval):
			}
		}
		return true
	}
	reached := poll(func() bool {
		version, err := api.version.ServerVersion()
		if err != nil {
			log.Printf("Unable to get server version: %v; retrying.", err)
			return false
		}
		log.Printf("Server version: %s", version)
		return true
	})
	if !reached {
		s.logf("Unable to contact Kubernetes within %s", timing.timeout)
		return
	}
	poll(func() bool {
		endpoints := api.endpoints(ctx, s)
		if len(endpoints) >= s.peers {
			return true
		}
		s.logf("%s/%s has %d endpoints (%v), which is less than %d as expected. Waiting for all endpoints to come up.",
			api.namespace, api.service, len(endpoints), endpoints, s.peers)
		return false
	})
	for round := range timing.rounds {
		for _, endpoint := range api.endpoints(ctx, s) {
			s.logf("Attempting to contact %s", endpoint)
			s.contact(ctx, endpoint)
		}
		if round < timing.rounds-1 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(timing.interval):
			}
		}
	}
}

// contact posts our host name to endpoint's /write and counts the answer's host name.
func (s *nettestState) contact(ctx context.Context, endpoint string) {
	body, err := json.Marshal(nettestWrite{Source: s.Hostname, Dest: endpoint})
	if err != nil {
		s.logf("Warning: encoding a /write body: %v", err)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/write", bytes.NewReader(body))
	if err != nil {
		s.logf("Warning: unable to contact the endpoint %q: %v", endpoint, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.logf("Warning: unable to contact the endpoint %q: %v", endpoint, err)
		return
	}
	defer resp.Body.Close()
	var written nettestWritten
	if err := json.NewDecoder(resp.Body).Decode(&written); err != nil {
		s.logf("Warning: unable to decode the answer from %q: %v", endpoint, err)
		return
	}
	s.sent(written.Hostname)
}

// peerAPI finds the peers through the API server: the ready endpoints of the service's
// EndpointSlices (upstream reads its Endpoints object, deprecated since v1.33; both
// hold the same addresses).
type peerAPI struct {
	version            discovery.ServerVersionInterface
	slices             discoveryclient.EndpointSlicesGetter
	namespace, service string
}

func inClusterPeerAPI(namespace, service string) (*peerAPI, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	return newPeerAPI(cfg, namespace, service)
}

func newPeerAPI(cfg *rest.Config, namespace, service string) (*peerAPI, error) {
	version, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	endpointSlices, err := discoveryclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the EndpointSlice client: %w", err)
	}
	return &peerAPI{version: version, slices: endpointSlices, namespace: namespace, service: service}, nil
}

// endpoints are the service's ready endpoints as http://IP:PORT, sorted and without
// duplicates; a failure to list is logged to s and gives none.
func (a *peerAPI) endpoints(ctx context.Context, s *nettestState) []string {
	list, err := a.slices.EndpointSlices(a.namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + a.service})
	if err != nil {
		s.logf("Unable to read the endpoints for %s/%s: %v.", a.namespace, a.service, err)
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, slice := range list.Items {
		for _, endpoint := range slice.Endpoints {
			if endpoint.Conditions.Ready != nil && !*endpoint.Conditions.Ready {
				continue
			}
			for _, addr := range endpoint.Addresses {
				for _, port := range slice.Ports {
					if port.Port == nil {
						continue
					}
					url := "http://" + net.JoinHostPort(addr, strconv.Itoa(int(*port.Port)))
					if !seen[url] {
						seen[url] = true
						out = append(out, url)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
