package controlplane

import (
	"strings"
	"testing"
)

// TestProfiling: with --profiling (miniapi's default, as kube-apiserver's) the admin reads Go's
// profiles at /debug/pprof/ through the real kubectl, a user without a rule for the path is
// refused as for any non-resource URL, and without --profiling the path is not served.
func TestProfiling(t *testing.T) {
	c := startClusterWith(t, func(o *Options) { o.Profiling = true })
	if out := c.mustKubectl(t, "", "get", "--raw", "/debug/pprof/goroutine?debug=1"); !strings.HasPrefix(out, "goroutine profile: total ") {
		t.Errorf("admin's goroutine profile:\n%.300s", out)
	}
	if out := c.mustKubectl(t, "", "get", "--raw", "/debug/pprof/"); !strings.Contains(out, "heap") {
		t.Errorf("profile index:\n%.300s", out)
	}
	out, err := c.kubectl(t, "", "--as=vera", "get", "--raw", "/debug/pprof/heap")
	if err == nil || !strings.Contains(out, `User "vera" cannot get path "/debug/pprof/heap"`) {
		t.Errorf("a user without a rule: %v\n%s", err, out)
	}

	off := startClusterWith(t, func(o *Options) { o.Profiling = false })
	if out, err := off.kubectl(t, "", "get", "--raw", "/debug/pprof/"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("without --profiling: %v\n%s", err, out)
	}
}
