package conformance

import (
	"bufio"
	"os"
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
// failure), skipped, or not run at all (renamed, or the run stopped before it), each test
// that ran without being listed, and each failed suite node (its setup, or its log check
// after the tests).
func Missed(names []string, results []Result) []string {
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	var missed []string
	ran := map[string]bool{}
	for _, r := range results {
		name := strings.TrimPrefix(r.Name, "[It] ")
		msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n")
		switch {
		case listed[name]:
			ran[name] = true
			if r.Status != "passed" {
				missed = append(missed, name+": "+r.Status+": "+msg)
			}
		case isSuiteNode(name):
			if r.Status == "failed" {
				missed = append(missed, name+": failed: "+msg)
			}
		default:
			missed = append(missed, name+": ran but is not listed")
		}
	}
	for _, n := range names {
		if !ran[n] {
			missed = append(missed, n+": did not run (renamed, or the run stopped before it)")
		}
	}
	return missed
}
