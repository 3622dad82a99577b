package main

import (
	"slices"
	"testing"
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
