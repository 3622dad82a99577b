package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"
)

const crashChildEnv = "MINIK8S_CONTROLPLANE_CRASH_CHILD" // DATA_DIR:PORT of the child miniapi

// crashChild runs miniapi on the parent's data dir and port until it is killed.
func crashChild(spec string) {
	i := strings.LastIndexByte(spec, ':')
	dir, port := spec[:max(i, 0)], spec[i+1:]
	p, err := strconv.Atoi(port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	time.AfterFunc(3*time.Minute, func() { os.Exit(3) }) // the parent should have killed it
	err = Run(context.Background(), Options{DataDir: dir, BindAddress: "127.0.0.1", SecurePort: p, Store: "bolt",
		ServiceRange: "10.96.0.0/12", Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// TestCrashConsistency is the crash test on the real API server and bolt engine in
// a process of their own, on loopback: 20 writers for 30 s, kill -9, a restart on the same
// data dir. Every write answered 2xx is there, none answered with an error (some ask for a
// timeout of a few milliseconds) is; a watch started before the kill and resumed after the
// restart from its last resourceVersion sees every object's creation, in order, no gap.
func TestCrashConsistency(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		crashChild(spec)
		return
	}
	testenv.Integration(t, "runs miniapi in a child process for 30 s of writes")
	dir, port := t.TempDir(), freeport.For(t)
	start := func() (*exec.Cmd, kubernetes.Interface) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashConsistency$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", crashChildEnv, dir, port))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var client kubernetes.Interface
		waitFor(t, "miniapi to serve", func() bool {
			cfg, err := clientcmd.BuildConfigFromFlags("", AdminKubeconfig(dir))
			if err != nil {
				return false
			}
			cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
			if client, err = kubernetes.NewForConfig(cfg); err != nil {
				return false
			}
			_, err = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
			return err == nil
		})
		return cmd, client
	}
	cmd, client := start()
	const ns = "default"
	list, err := client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The watch: every ConfigMap event from before the first write, across the restart.
	type seen struct {
		name string
		rv   int64
	}
	var (
		mu      sync.Mutex
		watched []seen
		lastRV  = list.ResourceVersion
	)
	follow := func(ctx context.Context, client kubernetes.Interface) error {
		w, err := client.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
		if err != nil {
			return err
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				return apierrors.FromObject(ev.Object)
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			mu.Lock()
			if ev.Type == watch.Added {
				watched = append(watched, seen{cm.Name, rv})
			}
			lastRV = cm.ResourceVersion
			mu.Unlock()
		}
		return nil
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- follow(t.Context(), client) }()

	// 20 writers for 30 s, each at most 10 creates a second; every 5th asks ?timeout=2ms.
	type outcome int
	const (
		acked outcome = iota
		refused
		unknown
	)
	var (
		outcomes   = map[string]outcome{}
		outcomesMu sync.Mutex
		writers    sync.WaitGroup
	)
	stop := time.Now().Add(30 * time.Second)
	for g := range 20 {
		writers.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				name := fmt.Sprintf("w%02d-%05d", g, i)
				req := client.CoreV1().RESTClient().Post().Namespace(ns).Resource("configmaps").
					Body(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}})
				if rand.IntN(5) == 0 {
					req = req.Param("timeout", "2ms")
				}
				err := req.Do(context.Background()).Error()
				var status apierrors.APIStatus
				o := unknown
				switch {
				case err == nil:
					o = acked
				case errors.As(err, &status) && status.Status().Code >= 400:
					o = refused
				}
				outcomesMu.Lock()
				outcomes[name] = o
				outcomesMu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Until(stop) - time.Second)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, writers still writing
		t.Fatal(err)
	}
	_ = cmd.Wait()
	writers.Wait()
	<-watchDone // the connection broke

	_, client = start()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	go func() { watchDone <- follow(ctx, client) }()
	after, err := client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, cm := range after.Items {
		present[cm.Name] = true
	}
	counts := map[outcome]int{}
	for name, o := range outcomes {
		counts[o]++
		if o == acked && !present[name] {
			t.Errorf("%s was acknowledged before the kill and is gone after the restart", name)
		}
		if o == refused && present[name] {
			t.Errorf("%s was answered with an error and is there after the restart", name)
		}
	}
	t.Logf("writes: %d acknowledged, %d answered with an error, %d without an answer (the kill); %d ConfigMaps after the restart",
		counts[acked], counts[refused], counts[unknown], len(after.Items))
	if counts[acked] < 1000 || counts[refused] == 0 {
		t.Fatalf("too few writes to show anything: %v", counts)
	}

	// The resumed watch reaches the list's revision with every object created once, in order.
	listRV, _ := strconv.ParseInt(after.ResourceVersion, 10, 64)
	waitFor(t, "the resumed watch to reach the list", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := len(watched)
		return n > 0 && watched[n-1].rv >= listRV || n >= len(after.Items)-len(list.Items)
	})
	cancel()
	<-watchDone
	mu.Lock()
	defer mu.Unlock()
	created := map[string]bool{}
	for i, s := range watched {
		if i > 0 && s.rv <= watched[i-1].rv {
			t.Fatalf("watch event %s at %d after %s at %d: out of order", s.name, s.rv, watched[i-1].name, watched[i-1].rv)
		}
		if created[s.name] {
			t.Fatalf("watch: %s created twice", s.name)
		}
		created[s.name] = true
	}
	for _, cm := range after.Items {
		rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
		if _, ok := outcomes[cm.Name]; ok && rv <= listRV && !created[cm.Name] {
			t.Errorf("watch gap: the creation of %s (revision %d) was never seen", cm.Name, rv)
		}
	}
	for name := range created {
		if !present[name] {
			t.Errorf("the watch saw %s created, but it is not there after the restart", name)
		}
	}
}
