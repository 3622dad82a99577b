package runtime

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// containerd's identifier rule (pkg/identifiers).
var validID = regexp.MustCompile(`^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$`)

func TestNewContainerID(t *testing.T) {
	for _, tc := range []struct{ uid, name, prefix string }{
		{"5f0c2a7e-8be9-4d1e-9b3a-53a942", "web", "5f0c2a7e-web-"},
		{"static-pod-ab", "sandbox", "static-p-sandbox-"},
		{"5f0c2a7e", "a--b", "5f0c2a7e-a-b-"},
		{"", "x", "x-"},
		{"5f0c2a7e", strings.Repeat("n", 63), "5f0c2a7e-nnnn"},
	} {
		id := newContainerID(tc.uid, tc.name)
		if !validID.MatchString(id) || len(id) > maxIDLength || !strings.HasPrefix(id, tc.prefix) {
			t.Errorf("newContainerID(%q, %q) = %q; want a valid containerd id starting with %q", tc.uid, tc.name, id, tc.prefix)
		}
	}
	if a, b := newContainerID("u", "c"), newContainerID("u", "c"); a == b {
		t.Errorf("two ids for the same container are equal: %s", a)
	}
}

func TestProcessArgs(t *testing.T) {
	entrypoint, cmd := []string{"/entry"}, []string{"--default"}
	for _, tc := range []struct {
		command, args, want []string
	}{
		{nil, nil, []string{"/entry", "--default"}},
		{nil, []string{"--flag"}, []string{"/entry", "--flag"}},
		{[]string{"sh", "-c"}, nil, []string{"sh", "-c"}},
		{[]string{"sh", "-c"}, []string{"echo hi"}, []string{"sh", "-c", "echo hi"}},
	} {
		if got := processArgs(entrypoint, cmd, tc.command, tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("processArgs(command %q, args %q) = %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
}
