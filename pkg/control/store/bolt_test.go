package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	bolt "go.etcd.io/bbolt"

	"github.com/minik8s/minik8s/internal/testenv"
)

func openBolt(t testing.TB, path string, opts BoltOptions) *Bolt {
	t.Helper()
	s, err := OpenBolt(path, opts)
	return closedAtEnd(t, s, err)
}

func boltStorage(opts BoltOptions) func(t *testing.T) openFunc {
	return func(t *testing.T) openFunc {
		path := filepath.Join(t.TempDir(), "state.db")
		return func(t *testing.T) Interface { return openBolt(t, path, opts) }
	}
}

func TestBoltConformance(t *testing.T) {
	t.Run("Default", func(t *testing.T) { runConformance(t, boltStorage(BoltOptions{})) })
	// A ring of 4 events sends resuming watches through the on-disk log, and then makes them
	// join the live stream while writes go on.
	t.Run("ReplayFromDisk", func(t *testing.T) { runConformance(t, boltStorage(BoltOptions{RingSize: 4})) })
}

func TestBoltHistoryLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := openBolt(t, path, BoltOptions{HistoryLimit: 50, RingSize: 8})
	for i := range 200 {
		mustCreate(t, s, fmt.Sprintf("/registry/h/%03d", i), "v")
	}
	rev := s.Revision()
	if _, err := s.Watch(t.Context(), "/registry/h/", rev-51); !errors.Is(err, ErrCompacted) {
		t.Fatalf("watch from beyond the history limit: got %v, want ErrCompacted", err)
	}
	got := receive(t, mustWatch(t, s, "/registry/h/", rev-50), 50)
	if got[0].Revision != rev-49 || got[49].Revision != rev {
		t.Fatalf("replayed revisions %d..%d, want %d..%d", got[0].Revision, got[49].Revision, rev-49, rev)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketEvents).Stats().KeyN; n != 50 {
			return fmt.Errorf("event log holds %d events, want the limit of 50", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBoltSlowWatcherIsClosed(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{WatchBuffer: 16})
	ch := mustWatch(t, s, "/registry/s/", 0)
	const writes = 500
	start := time.Now()
	for i := range writes {
		mustCreate(t, s, fmt.Sprintf("/registry/s/%03d", i), "v")
	}
	t.Logf("%d writes with a stalled watcher took %s", writes, time.Since(start))

	// The stalled watcher gets a gap-free prefix of the events, then a closed channel.
	var got []Event
	timeout := time.After(eventTimeout)
	for closed := false; !closed; {
		select {
		case ev, ok := <-ch:
			if !ok {
				closed = true
				break
			}
			if len(got) > 0 && ev.Revision != got[len(got)-1].Revision+1 {
				t.Fatalf("gap: revision %d after %d", ev.Revision, got[len(got)-1].Revision)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("slow watcher still open after %d events", len(got))
		}
	}
	if len(got) >= writes {
		t.Fatalf("slow watcher received all %d events; expected it to be cut off", len(got))
	}
	if n := counterValue(t, s.metrics.slowWatchers); n != 1 {
		t.Fatalf("slow watchers closed: %v, want 1", n)
	}
}

func counterValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("unexpected metric %v", &m)
	return 0
}

func TestBoltMetrics(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{})
	reg := prometheus.NewRegistry()
	for _, c := range s.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mustWatch(t, s, "/registry/m/", 0)
	for i := range 5 {
		mustCreate(t, s, fmt.Sprint("/registry/m/", i), "v")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			values[f.GetName()] = m.Gauge.GetValue()
		case m.Histogram != nil:
			values[f.GetName()] = float64(m.Histogram.GetSampleCount())
		}
	}
	if values["minik8s_store_revision"] != float64(s.Revision()) || values["minik8s_store_watchers"] != 1 ||
		values["minik8s_store_commit_duration_seconds"] < 1 {
		t.Fatalf("metrics: %v (revision %d)", values, s.Revision())
	}
}

func TestBoltOpenErrors(t *testing.T) {
	dir := t.TempDir()
	t.Run("Locked", func(t *testing.T) {
		path := filepath.Join(dir, "locked.db")
		openBolt(t, path, BoltOptions{})
		start := time.Now()
		_, err := OpenBolt(path, BoltOptions{LockTimeout: 200 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "locked by another process") {
			t.Fatalf("second open of %s: %v", path, err)
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("second open took %s to fail", time.Since(start))
		}
	})
	t.Run("Corrupt", func(t *testing.T) {
		path := filepath.Join(dir, "corrupt.db")
		if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("open of a corrupt file: %v", err)
		}
	})
	// A store cut short or with a page overwritten (a crash of the disk, not of miniapi) is
	// refused with an error naming the file and the way back, never a panic of bbolt's.
	for _, damage := range []struct {
		name string
		do   func(f *os.File, size int64) error
	}{
		{"Truncated", func(f *os.File, size int64) error { return f.Truncate(size / 2) }},
		{"OverwrittenPage", func(f *os.File, size int64) error {
			_, err := f.WriteAt(bytes.Repeat([]byte{0xa5}, 4096), size/2/4096*4096)
			return err
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			s, err := OpenBolt(path, BoltOptions{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			value := bytes.Repeat([]byte("v"), 1000)
			for i := range 2000 {
				if _, err := s.Create(t.Context(), fmt.Sprintf("/registry/c/%05d", i), value); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := f.Stat()
			if err == nil {
				err = damage.do(f, fi.Size())
			}
			if cerr := f.Close(); err != nil || cerr != nil {
				t.Fatal(err, cerr)
			}
			s, err = OpenBolt(path, BoltOptions{})
			if err == nil {
				_ = s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "backup") {
				t.Fatalf("open of a damaged store: %v, want an error naming the file, the corruption and the recovery", err)

			}
		})
	}
	t.Run("ForeignBoltFile", func(t *testing.T) {
		path := filepath.Join(dir, "foreign.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("v1")); return err })
		if cerr := db.Close(); err != nil || cerr != nil {
			t.Fatal(err, cerr)
		}
		_, err = OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another program") {
			t.Fatalf("open of another program's bbolt file: %v", err)
		}
	})
	t.Run("MissingDir", func(t *testing.T) {
		path := filepath.Join(dir, "missing", "state.db")
		_, err := OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("open in a missing directory: %v", err)
		}
	})
	t.Run("Permission", func(t *testing.T) {
		path := filepath.Join(dir, "readonly.db")
		if err := os.WriteFile(path, nil, 0o400); err != nil {
			t.Fatal(err)
		}
		// root ignores file modes but not the immutable attribute.
		if os.Geteuid() == 0 {
			chattr, err := exec.LookPath("chattr")
			if err != nil {
				testenv.Missing(t, "running as root and chattr (e2fsprogs) is missing: cannot make a file root may not write")
			}
			if out, err := exec.Command(chattr, "+i", path).CombinedOutput(); err != nil {
				t.Skipf("running as root and chattr +i failed (file system without attributes?): %v: %s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command(chattr, "-i", path).Run() })
		}
		_, err := OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no permission") {
			t.Fatalf("open of a read-only file: %v", err)
		}
	})
}

// A write whose context is done is never applied, as in Kubernetes: its client is told it
// failed (the API server answers 504), so it must not land.
func TestBoltWriteWithDoneContext(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{NoSync: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for i := range 100 {
		key := fmt.Sprintf("/registry/done/%03d", i)
		if _, err := s.Create(ctx, key, []byte("v")); !errors.Is(err, context.Canceled) {
			t.Fatalf("create with a done context: %v, want context.Canceled", err)
		}
		if _, err := s.Get(t.Context(), key); !errors.Is(err, ErrNotFound) {
			t.Fatalf("create %d with a done context was applied (get: %v)", i, err)
		}
	}
	if s.Revision() != 0 {
		t.Fatalf("revision %d after writes that all failed", s.Revision())
	}
}

// A request's CommitGuard decides once between its writes and its timeout: after TimeOut
// no write of the request is applied; once a write has taken the guard (being committed
// or landed), TimeOut refuses and the request's writes go on even though its context is done.
func TestBoltCommitGuard(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{NoSync: true})
	ctx, cancel := context.WithCancel(t.Context())
	ctx, guard := WithCommitGuard(ctx)
	if _, err := s.Create(ctx, "/registry/g/first", []byte("v")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if guard.TimeOut() || guard.TimedOut() {
		t.Fatal("TimeOut took a guard a write had taken")
	}
	if _, err := s.Create(ctx, "/registry/g/second", []byte("v")); err != nil {
		t.Fatalf("a second write of a request whose write committed: %v", err)
	}

	// A write refused (a conflict a patch retries) lands nothing, so it leaves the guard
	// to the timeout: the request's client gets 504, not an error of the retry.
	ctx, guard = WithCommitGuard(t.Context())
	if _, err := s.Update(ctx, "/registry/g/first", []byte("w"), 999); !errors.Is(err, ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want a conflict", err)
	}
	if !guard.TimeOut() {
		t.Fatal("TimeOut refused after the request's only write was refused")
	}

	ctx, guard = WithCommitGuard(t.Context())
	if !guard.TimeOut() {
		t.Fatal("TimeOut of an untaken guard failed")
	}
	if _, err := s.Create(ctx, "/registry/g/late", []byte("v")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write of a timed-out request: %v, want context.DeadlineExceeded", err)
	}
	if _, err := s.Get(t.Context(), "/registry/g/late"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a write of a timed-out request was applied (get: %v)", err)
	}
}

const crashChildEnv = "MINIK8S_STORE_CRASH_CHILD_DB"

// TestBoltCrash kill -9s a writer mid-stream and checks every write it had acknowledged.
func TestBoltCrash(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "state.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltCrash$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill() // SIGKILL
		}
	}
	watchdog := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()

	const killAfter = 3000
	var acked []string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		key, ok := strings.CutPrefix(lines.Text(), "ack ")
		if !ok {
			continue
		}
		acked = append(acked, key)
		if len(acked) == killAfter {
			kill()
		}
	}
	waitErr := cmd.Wait()
	if len(acked) < killAfter {
		t.Fatalf("child acknowledged only %d writes (%v): %s", len(acked), waitErr, stderr.String())
	}
	t.Logf("child killed after %d acknowledged writes (%v)", len(acked), waitErr)

	s := openBolt(t, path, BoltOptions{})
	for _, key := range acked {
		kv, err := s.Get(t.Context(), key)
		if err != nil {
			t.Fatalf("acknowledged write lost in the crash: %v", err)
		}
		if string(kv.Value) != key {
			t.Fatalf("%s has value %q after the crash", key, kv.Value)
		}
	}
	if s.Revision() < int64(len(acked)) {
		t.Fatalf("revision %d after %d acknowledged creates", s.Revision(), len(acked))
	}
}

// crashChild writes with 16 concurrent writers, printing each key once its write is
// acknowledged, until the parent kills it.
func crashChild(path string) {
	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	time.AfterFunc(30*time.Second, func() { os.Exit(3) }) // the parent should have killed us
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("/registry/crash/g%02d-%07d", g, i)
				if _, err := s.Create(context.Background(), key, []byte(key)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				// One write call per line: lines from different writers never interleave.
				if _, err := os.Stdout.WriteString("ack " + key + "\n"); err != nil {
					os.Exit(2)
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkBoltCreate measures acknowledged (fsynced) creates per second by writer count;
// commits/op shows how many writes share one commit.
func BenchmarkBoltCreate(b *testing.B) {
	value := bytes.Repeat([]byte("x"), 1024)
	for _, writers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openBolt(b, filepath.Join(b.TempDir(), "state.db"), BoltOptions{})
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						if _, err := s.Create(context.Background(), fmt.Sprint("/registry/bench/", i), value); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			var m dto.Metric
			if err := s.metrics.batchSize.Write(&m); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(m.Histogram.GetSampleCount())/float64(b.N), "commits/op")
		})
	}
}

// An exact list needs, for every key changed since, the revision of its version then: one
// written before the oldest logged change cannot be restored, so the list counts as compacted.
func TestBoltListAtBeyondTheLog(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "state.db"), BoltOptions{HistoryLimit: 4})
	a := mustCreate(t, s, "/registry/l/a", "a1")
	for i := range 4 {
		mustCreate(t, s, fmt.Sprintf("/registry/l/k%d", i), "v")
	}
	before := s.Revision()
	mustUpdate(t, s, "/registry/l/a", "a2", a)
	if _, _, err := s.ListAt(t.Context(), "/registry/l/", before, true); !errors.Is(err, ErrCompacted) {
		t.Fatalf("exact list at %d undoing a change to a version of revision %d, older than the log: %v, want ErrCompacted", before, a, err)
	}
	// Keys the undone changes do not touch need no history.
	if kvs, _, err := s.ListAt(t.Context(), "/registry/l/k", before, true); err != nil || len(kvs) != 4 {
		t.Fatalf("exact list of other keys at %d: %d keys, %v", before, len(kvs), err)
	}
}
