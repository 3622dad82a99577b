package conformance

import (
	"slices"
	"strings"
	"testing"
)

// TestCISubsetList: the list make test runs names each test once, as Ginkgo names a
// [Conformance] test, and none that must run alone or takes minutes.
func TestCISubsetList(t *testing.T) {
	names, err := ReadNames(subsetFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("%s lists %d tests; the subset is meant to be broad", subsetFile, len(names))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("listed twice: %s", n)
		}
		seen[n] = true
		if !strings.HasPrefix(n, "[sig-") || !strings.HasSuffix(n, "[Conformance]") {
			t.Errorf("not a conformance test's name ([sig-X] ... [Conformance]): %s", n)
		}
		for _, tag := range []string{"[Serial]", "[Slow]", "[Disruptive]"} {
			if strings.Contains(n, tag) {
				t.Errorf("%s test in the CI subset: %s", tag, n)
			}
		}
	}
}

func TestMissed(t *testing.T) {
	names := []string{"[sig-a] passes [Conformance]", "[sig-a] fails [Conformance]", "[sig-b] renamed [Conformance]"}
	results := []Result{
		{Name: "[It] [sig-a] passes [Conformance]", SIG: "a", Status: "passed"},
		{Name: "[It] [sig-a] fails [Conformance]", SIG: "a", Status: "failed", Message: "[FAILED] timed out\nmore"},
		{Name: "[It] [sig-c] extra [Conformance]", SIG: "c", Status: "passed"},
		{Name: "[SynchronizedBeforeSuite]", SIG: "suite", Status: "failed", Message: "no nodes"},
		{Name: "[ReportAfterSuite] [sig-testing] Log Check", SIG: "testing", Status: "passed"},
	}
	want := []string{
		"[sig-a] fails [Conformance]: failed: [FAILED] timed out",
		"[sig-c] extra [Conformance]: ran but is not listed",
		"[SynchronizedBeforeSuite]: failed: no nodes",
		"[sig-b] renamed [Conformance]: did not run (renamed, or the run stopped before it)",
	}
	if got := Missed(names, results); !slices.Equal(got, want) {
		t.Errorf("Missed:\n got %q\nwant %q", got, want)
	}
	if got := Missed(names[:1], results[:1]); len(got) != 0 {
		t.Errorf("all passed, yet Missed = %q", got)
	}
}
