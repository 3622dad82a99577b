// Package conformance reads the JUnit report of the Kubernetes conformance suite
// (e2e.test --report-dir) and sums it up per SIG: what `make conformance` prints and the
// CI subset (conformance_test.go) checks.
package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one test case of the report.
type Result struct {
	Name     string
	SIG      string // "api-machinery" for "[sig-api-machinery] ..."; "other" without a tag
	Status   string // passed, failed or skipped
	Duration time.Duration
	Message  string // the failure or skip message
}

// junit is the part of Ginkgo's JUnit report that Read needs.
type junit struct {
	Suites []struct {
		Cases []struct {
			Name    string   `xml:"name,attr"`
			Status  string   `xml:"status,attr"`
			Time    float64  `xml:"time,attr"`
			Failure *failure `xml:"failure"`
			Error   *failure `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// failure is a <failure> or <error>: e2e.test's report leaves the message attribute out and
// puts the text in the element.
type failure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func (f *failure) String() string {
	if f.Message != "" {
		return f.Message
	}
	return f.Text
}

var sigTag = regexp.MustCompile(`\[sig-([a-z0-9-]+)\]`)

// Read parses a Ginkgo JUnit report. Specs left out by the focus or label filter (Ginkgo
// reports them skipped with no reason) are not results; the suite's own nodes ([SynchronizedBeforeSuite],
// [ReportAfterSuite] ...) are left out unless they failed, which counts under "suite".
func Read(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var report junit
	if err := xml.Unmarshal(data, &report); err != nil {
		return nil, fmt.Errorf("%s: not a JUnit report: %w", path, err)
	}
	var results []Result
	for _, s := range report.Suites {
		for _, c := range s.Cases {
			r := Result{Name: c.Name, Status: c.Status, Duration: time.Duration(c.Time * float64(time.Second))}
			switch {
			case c.Failure != nil:
				r.Status, r.Message = "failed", c.Failure.String()
			case c.Error != nil:
				r.Status, r.Message = "failed", c.Error.String()
			case c.Skipped != nil && c.Skipped.Message == "skipped":
				continue // filtered out by focus or labels: not run, not part of the result
			case c.Skipped != nil || c.Status == "pending":
				r.Status = "skipped"
				if c.Skipped != nil {
					r.Message = c.Skipped.Message
				}
			case c.Status == "":
				r.Status = "passed"
			}
			if m := sigTag.FindStringSubmatch(c.Name); m != nil {
				r.SIG = m[1]
			} else if isSuiteNode(c.Name) {
				if r.Status != "failed" {
					continue
				}
				r.SIG = "suite"
			} else {
				r.SIG = "other"
			}
			results = append(results, r)
		}
	}
	return results, nil
}

// suiteNodes are the names Ginkgo gives the suite's setup and report nodes.
var suiteNodes = []string{"[BeforeSuite]", "[AfterSuite]", "[SynchronizedBeforeSuite]", "[SynchronizedAfterSuite]",
	"[ReportBeforeSuite]", "[ReportAfterSuite]", "[DeferCleanup (Suite)]"}

func isSuiteNode(name string) bool {
	return slices.ContainsFunc(suiteNodes, func(n string) bool { return strings.HasPrefix(name, n) })
}

// Count is the tally of one SIG.
type Count struct {
	SIG                     string
	Passed, Failed, Skipped int
	Time                    time.Duration
}

// Summarize tallies results per SIG, sorted by name, with the total last.
func Summarize(results []Result) []Count {
	bySIG := map[string]*Count{}
	total := Count{SIG: "total"}
	for _, r := range results {
		c := bySIG[r.SIG]
		if c == nil {
			c = &Count{SIG: r.SIG}
			bySIG[r.SIG] = c
		}
		for _, x := range []*Count{c, &total} {
			switch r.Status {
			case "passed":
				x.Passed++
			case "failed":
				x.Failed++
			default:
				x.Skipped++
			}
			x.Time += r.Duration
		}
	}
	var out []Count
	for _, c := range bySIG {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Count) int { return strings.Compare(a.SIG, b.SIG) })
	return append(out, total)
}

// Write prints the per-SIG table and then every failed test with the first line of its
// message.
func Write(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SIG\tpassed\tfailed\tskipped\ttime\t")
	for _, c := range Summarize(results) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t\n", c.SIG, c.Passed, c.Failed, c.Skipped, c.Time.Round(time.Second))
	}
	tw.Flush()
	for _, r := range results {
		if r.Status == "failed" {
			msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n")
			fmt.Fprintf(w, "FAILED %s\n    %s\n", r.Name, msg)
		}
	}
}
