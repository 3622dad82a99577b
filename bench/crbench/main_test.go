package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/bench/internal/benchapi"
)

func TestParseInts(t *testing.T) {
	if got, err := parseInts("1, 16,64"); err != nil || !slices.Equal(got, []int{1, 16, 64}) {
		t.Errorf("parseInts(1, 16,64) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "x", "-4"} {
		if got, err := parseInts(bad); err == nil {
			t.Errorf("parseInts(%q) = %v, want an error", bad, got)
		}
	}
}

// serverTimes reads miniapi's request verb and bolt commits as well as kube-apiserver's
// verb and etcd requests, between two scrapes.
func TestServerTimes(t *testing.T) {
	parse := func(text string) benchapi.Metrics {
		m, err := benchapi.ParseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	const histogram = "# TYPE %[1]s histogram\n%[1]s_bucket{%[2]s,le=\"+Inf\"} %[4]d\n%[1]s_sum{%[2]s} %[3]g\n%[1]s_count{%[2]s} %[4]d\n"
	scrape := func(name, labels string, sum float64, count int, more ...string) string {
		return fmt.Sprintf(histogram, name, labels, sum, count) + strings.Join(more, "")
	}
	other := `verb="create",group="",resource="pods"` // not a Widget: left out
	for _, tc := range []struct {
		name          string
		before, after benchapi.Metrics
		request, st   time.Duration
	}{
		{"miniapi",
			parse(scrape("apiserver_request_duration_seconds", `verb="create",group="bench.minik8s.io",resource="widgets"`, 1, 10) +
				scrape("minik8s_store_commit_duration_seconds", `x="y"`, 0.5, 10)),
			parse(scrape("apiserver_request_duration_seconds", `verb="create",group="bench.minik8s.io",resource="widgets"`, 1.5, 110) +
				scrape("minik8s_store_commit_duration_seconds", `x="y"`, 0.8, 110)),
			5 * time.Millisecond, 3 * time.Millisecond},
		{"kube-apiserver",
			parse(scrape("apiserver_request_duration_seconds", `verb="POST",group="bench.minik8s.io",resource="widgets",scope="resource"`, 2, 10) +
				scrape("etcd_request_duration_seconds", `operation="create",type="bench.minik8s.io/widgets"`, 1, 10)),
			parse(scrape("apiserver_request_duration_seconds", `verb="POST",group="bench.minik8s.io",resource="widgets",scope="resource"`, 2.4, 110) +
				scrape("etcd_request_duration_seconds", `operation="create",type="bench.minik8s.io/widgets"`, 1.2, 110)),
			4 * time.Millisecond, 2 * time.Millisecond},
		{"no such histograms", parse(scrape("x_seconds", other, 1, 1)), parse(scrape("x_seconds", other, 2, 2)), 0, 0},
	} {
		request, st := serverTimes(tc.before, tc.after)
		if request != tc.request || st != tc.st {
			t.Errorf("%s: serverTimes = %s, %s; want %s, %s", tc.name, request, st, tc.request, tc.st)
		}
	}
}
