package main

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
	"github.com/minik8s/minik8s/internal/cputime"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The floors of a 1-client create: what its wall time holds that is no API server's work.
// A create waits for the client (encoding the Widget, decoding the answer), HTTP/2 over TLS
// on loopback and the scheduler, then for the store's commit on this disk; the floors
// measure each alone, n times back to back, with the Widget a server answered (its size
// as stored, managed fields and all).

// floor is one floor's figures.
type floor struct {
	what string
	benchapi.Latencies
	clientCPU, etcdCPU time.Duration // per create
}

func (f floor) String() string {
	s := fmt.Sprintf("%-46s %6.0f/s, mean %s, p50 %s; CPU per create: this process %s", f.what, f.PerSecond(), mean(f.Each), f.P(50), f.clientCPU.Round(time.Microsecond))
	if f.etcdCPU > 0 {
		s += fmt.Sprintf(", etcd %s", f.etcdCPU.Round(time.Microsecond))
	}
	return s
}

// floors measures the three floors in dir, on the disk the servers' data was on.
func floors(dir string, answer *unstructured.Unstructured, n int) ([]floor, error) {
	value, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	echo, err := echoFloor(answer, n)
	if err != nil {
		return nil, fmt.Errorf("echo floor: %w", err)
	}
	bolt, err := boltFloor(filepath.Join(dir, "floor.db"), value, n)
	if err != nil {
		return nil, fmt.Errorf("bolt floor: %w", err)
	}
	etcd, err := etcdFloor(filepath.Join(dir, "floor-etcd"), value, n)
	if err != nil {
		return nil, fmt.Errorf("etcd floor: %w", err)
	}
	return []floor{echo, bolt, etcd}, nil
}

// echoFloor is the same dynamic client creating Widgets on a server that only answers:
// 201 and the Widget, over HTTP/2 and TLS as the API servers serve.
func echoFloor(answer *unstructured.Unstructured, n int) (floor, error) {
	body, err := json.Marshal(answer)
	if err != nil {
		return floor{}, err
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	cfg := &rest.Config{Host: ts.URL, QPS: -1, Timeout: 30 * time.Second,
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})}}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return floor{}, err
	}
	c := dyn.Resource(widgets).Namespace(answer.GetNamespace())
	return timed("client + HTTP/2 + TLS, a server that only answers", n, func(i int) error {
		_, err := c.Create(context.Background(), widget(answer.GetNamespace(), fmt.Sprintf("echo-%d", i), int64(i)), metav1.CreateOptions{})
		return err
	}, 0)
}

// boltFloor is miniapi's store engine alone: Bolt.Create of the Widget's bytes, one commit
// (and its fsyncs) each.
func boltFloor(path string, value []byte, n int) (floor, error) {
	db, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		return floor{}, err
	}
	defer db.Close()
	return timed(fmt.Sprintf("bolt commit (store.Bolt.Create, %d B)", len(value)), n, func(i int) error {
		_, err := db.Create(context.Background(), fmt.Sprintf("/floor/%d", i), value)
		return err
	}, 0)
}

// etcdFloor is a one-member etcd as the etcd sides run it (TLS, its own), creating the
// Widget's bytes through store.Etcd.Create: a transaction putting a key if it is absent,
// as kube-apiserver's create is.
func etcdFloor(dir string, value []byte, n int) (floor, error) {
	cluster, err := etcdtest.StartCluster(dir, etcdtest.Options{TLS: true})
	if err != nil {
		return floor{}, err
	}
	defer cluster.Stop()
	tlsConfig, err := cluster.ClientTLS()
	if err != nil {
		return floor{}, err
	}
	db, err := store.OpenEtcd(cluster.Endpoints, "/floor", tlsConfig)
	if err != nil {
		return floor{}, err
	}
	defer db.Close()
	return timed(fmt.Sprintf("etcd create (store.Etcd.Create, %d B)", len(value)), n, func(i int) error {
		_, err := db.Create(context.Background(), fmt.Sprintf("/floor/%d", i), value)
		return err
	}, cluster.Members[0].PID())
}

// timed runs create(0..n-1) back to back and takes this process's and etcdPID's CPU.
func timed(what string, n int, create func(i int) error, etcdPID int) (floor, error) {
	f := floor{what: what}
	client0, etcd0 := cputime.Self(), cpuTime(etcdPID)
	var err error
	f.Latencies, err = benchapi.ClosedLoop([]int{0}, func(i int) bool { return i < n }, func(_ int, _, i int) error { return create(i) })
	if err != nil {
		return f, err
	}
	done := time.Duration(len(f.Each))
	f.clientCPU, f.etcdCPU = (cputime.Self()-client0)/done, (cpuTime(etcdPID)-etcd0)/done
	return f, nil
}

// mean is the mean of ds, to the microsecond.
func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(len(ds))).Round(time.Microsecond)
}
