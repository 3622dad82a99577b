package controllertest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// recorder is a testing.TB that records a Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	panic(r) // stands in for runtime.Goexit: nothing after Fatalf runs
}

func run(f func(tb testing.TB)) (msg string) {
	r := &recorder{TB: &testing.T{}}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		msg = r.msg
	}()
	f(r)
	return ""
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	msg := run(func(tb testing.TB) {
		WaitFor(tb, "three looks", 5*time.Second, func() (bool, string) { n++; return n == 3, fmt.Sprint(n) })
	})
	if msg != "" || n != 3 {
		t.Errorf("looked %d times, failure %q; want 3 looks and no failure", n, msg)
	}
}

func TestWaitForFailsWithTheLastState(t *testing.T) {
	msg := run(func(tb testing.TB) {
		WaitFor(tb, "never", 300*time.Millisecond, func() (bool, string) { return false, "still not" })
	})
	if !strings.Contains(msg, "waiting for never") || !strings.Contains(msg, "last: still not") {
		t.Errorf("failure %q, want what was awaited and the last state", msg)
	}
	msg = run(func(tb testing.TB) { Until(tb, "nothing", 300*time.Millisecond, func() bool { return false }) })
	if msg != "timed out after 300ms waiting for nothing" {
		t.Errorf("Until's failure %q", msg)
	}
}

func TestEventuallyNamesWantAndTheLastReading(t *testing.T) {
	msg := run(func(tb testing.TB) {
		Eventually(tb, "slices", 300*time.Millisecond, func() string { return "a,b" }, "a")
	})
	if !strings.Contains(msg, `waiting for slices: "a"`) || !strings.Contains(msg, "last: a,b") {
		t.Errorf("failure %q, want what was awaited, its wanted reading and the last one", msg)
	}
	if msg := run(func(tb testing.TB) { Eventually(tb, "slices", 5*time.Second, func() string { return "a" }, "a") }); msg != "" {
		t.Errorf("failure %q for a state that reads want", msg)
	}
}

// TestStartInformersReturnsWithFullCaches: the objects the client holds are in the listers
// when StartInformers returns.
func TestStartInformersReturnsWithFullCaches(t *testing.T) {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}), 0)
	nodes := factory.Core().V1().Nodes().Lister()
	ctx := StartInformers(t, factory)
	if _, err := nodes.Get("n1"); err != nil || ctx.Err() != nil {
		t.Errorf("node n1 in the cache: %v; context: %v", err, ctx.Err())
	}
}
