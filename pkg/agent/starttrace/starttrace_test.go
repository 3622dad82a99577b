package starttrace

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestTrace: a step met again adds to its time, the trace logs once, and a nil trace (an
// adopted pod) records nothing.
func TestTrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := New(t0)
	tr.Mark("image", t0.Add(2*time.Second))
	tr.Mark("start", t0.Add(3*time.Second))
	tr.Mark("image", t0.Add(7*time.Second))
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	tr.Running(log, "default/web", t0.Add(8*time.Second))
	tr.Running(log, "default/web", t0.Add(9*time.Second))
	got := out.String()
	if strings.Count(got, "Observed pod startup duration") != 1 {
		t.Fatalf("want one log line, got:\n%s", got)
	}
	for _, want := range []string{"pod=default/web", "total=8s", "image=6s", "start=1s"} {
		if !strings.Contains(got, want) {
			t.Errorf("log line lacks %s:\n%s", want, got)
		}
	}
	var none *Trace
	none.Mark("image", t0)
	none.Running(log, "default/adopted", t0)
	if strings.Contains(out.String(), "adopted") {
		t.Errorf("a nil trace logged:\n%s", out.String())
	}
}
