package job

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// parseIndexes reads status.completedIndexes ("1,3-5,7"), ignoring what is out of
// [0, completions) or unreadable, as Kubernetes does for a hand-edited status.
func parseIndexes(s string, completions int) map[int]bool {
	set := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := max(first, 0); i <= last && i < completions; i++ {
			set[i] = true
		}
	}
	return set
}

// formatIndexes writes a set of indexes as Kubernetes does: ascending, runs of three or
// more consecutive indexes as "a-b", everything joined by commas ("0,1,3-5").
func formatIndexes(set map[int]bool) string {
	sorted := make([]int, 0, len(set))
	for i, in := range set {
		if in {
			sorted = append(sorted, i)
		}
	}
	slices.Sort(sorted)
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch j - i {
		case 0:
			b.WriteString(strconv.Itoa(sorted[i]))
		case 1:
			fmt.Fprintf(&b, "%d,%d", sorted[i], sorted[j])
		default:
			fmt.Fprintf(&b, "%d-%d", sorted[i], sorted[j])
		}
		i = j + 1
	}
	return b.String()
}
