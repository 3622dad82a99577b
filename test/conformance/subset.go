package conformance

import (
	"bufio"
	"maps"
	"os"
	"slices"
	"strings"
)

// ReadNames reads a list of test names, one a line, as hack/conformance.sh's FOCUS_FILE:
// `#` starts a comment, blank lines are left out.
func ReadNames(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			names = append(names, line)
		}
	}
	return names, sc.Err()
}

// Missed names each listed test that did not pass: failed (with the first line of its
// failure), skipped, or not run at all (a name no test has any more), each test that ran
// without being listed, and a failed suite node (its setup, or its log check after the tests).
func Missed(names []string, results []Result) []string {
	byName := map[string]Result{}
	for _, r := range results {
		byName[strings.TrimPrefix(r.Name, "[It] ")] = r
	}
	var missed []string
	for _, n := range names {
		r, ran := byName[n]
		switch {
		case !ran:
			missed = append(missed, n+": did not run (no test has this name)")
		case r.Status != "passed":
			msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n")
			missed = append(missed, n+": "+r.Status+": "+msg)
		}
		delete(byName, n)
	}
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		switch r := byName[n]; {
		case !isSuiteNode(n):
			missed = append(missed, n+": ran but is not listed")
		case r.Status == "failed": // the suite's setup or checks ([ReportAfterSuite] Log Check)
			msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n")
			missed = append(missed, n+": failed: "+msg)
		}
	}
	return missed
}
