package controlplanetest

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// One miniapi per test binary for the tests that need none of their own: a miniapi's start
// and its controllers' informers cost more CPU than most tests do, so a package whose tests
// each started one spent most of its time starting them.
var shared struct {
	main  bool // Main runs the tests, so the shared miniapi is stopped after them
	once  sync.Once
	dir   string
	c     *Cluster
	stop  func() error
	err   error
	tests atomic.Int64 // namespaces handed out, to keep their names apart
}

// Shared is the test binary's miniapi (default options, every controller), started by the
// first test that asks, with Namespace and kubectl's namespace set to a new one for t: the
// test keeps its objects there. Cluster-scoped objects (nodes) are seen by every test of
// the binary. The package's TestMain must run its tests through Main.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if !shared.main {
		t.Fatal("controlplanetest.Shared needs the package's TestMain to run controlplanetest.Main(m)")
	}
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "controlplanetest-"); shared.err == nil {
			shared.c, shared.stop, shared.err = launch(shared.dir, nil)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	c := *shared.c
	c.Namespace = fmt.Sprintf("t%d-%s", shared.tests.Add(1), dnsLabel(t.Name()))
	c.CreateNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})
	return &c
}

// Main runs the package's tests and then stops the shared miniapi, if one started; a
// TestMain of a package using Shared is just `func TestMain(m *testing.M) { controlplanetest.Main(m) }`.
func Main(m *testing.M) {
	shared.main = true
	code := m.Run()
	if shared.stop != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "the shared miniapi stopped with error: %v\n", err)
			code = max(code, 1)
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

var notInLabel = regexp.MustCompile(`[^a-z0-9]+`)

// dnsLabel is name made fit for a namespace name's tail (with room for Shared's prefix).
func dnsLabel(name string) string {
	s := strings.Trim(notInLabel.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	return s
}
