// Package controllertest holds what the controllers' tests share: waiting for a controller
// to bring the cluster to a state.
package controllertest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// poll is how often a condition is looked at again.
const poll = 100 * time.Millisecond

// WaitFor looks at cond now and every poll until it holds, failing t after within with what
// it waited for and the last state cond reported. cond runs on the test's goroutine, so it
// may fail t itself.
func WaitFor(t testing.TB, what string, within time.Duration, cond func() (ok bool, state string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, within, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	switch {
	case err == nil:
	case last != "":
		t.Fatalf("timed out after %v waiting for %s; last: %s", within, what, last)
	default:
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Until is WaitFor for a condition with no state to report.
func Until(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	WaitFor(t, what, within, func() (bool, string) { return cond(), "" })
}
