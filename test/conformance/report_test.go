package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report as e2e.test writes it: suite nodes, a pass, a failure (its text in the
// element), a skip with its reason, a spec filtered out, an untagged test.
const sampleReport = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" disabled="0" errors="0" failures="1" time="30">
  <testsuite name="Kubernetes e2e suite" package="/e2e" tests="5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.5"></testcase>
    <testcase name="[sig-apps] Deployment should run [Conformance]" classname="Kubernetes e2e suite" status="passed" time="10"></testcase>
    <testcase name="[sig-api-machinery] Discovery should validate [Conformance]" classname="Kubernetes e2e suite" status="failed" time="2">
      <failure type="failed">[FAILED] Failed to find /apis/&#xA;the server could not find</failure>
    </testcase>
    <testcase name="[sig-storage] Filtered out" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[sig-apps] Job should skip [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - Only supported for providers [gce]"></skipped>
    </testcase>
    <testcase name="Untagged test [Conformance]" classname="Kubernetes e2e suite" status="passed" time="3"></testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
  </testsuite>
</testsuites>`

func TestReadAndSummarize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit_01.xml")
	if err := os.WriteFile(path, []byte(sampleReport), 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 4 {
		t.Fatalf("want 4 tests (suite nodes and the filtered-out spec left out), got %d: %+v", len(results), results)
	}
	got := Summarize(results)
	want := []Count{
		{SIG: "api-machinery", Failed: 1, Time: 2e9},
		{SIG: "apps", Passed: 1, Skipped: 1, Time: 10e9},
		{SIG: "other", Passed: 1, Time: 3e9},
		{SIG: "total", Passed: 2, Failed: 1, Skipped: 1, Time: 15e9},
	}
	if len(got) != len(want) {
		t.Fatalf("summary %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var out bytes.Buffer
	Write(&out, results)
	if !strings.Contains(out.String(), "FAILED [sig-api-machinery] Discovery should validate [Conformance]\n    [FAILED] Failed to find /apis/\n") {
		t.Errorf("failure not listed with its first message line:\n%s", out.String())
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.xml")); err == nil {
		t.Error("a missing report read without error")
	}
}
