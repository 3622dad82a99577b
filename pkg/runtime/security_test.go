package runtime

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"k8s.io/utils/ptr"
)

func TestCheckNonRoot(t *testing.T) {
	const pod, suffix = "web_default(uid-1)", ` (pod: "web_default(uid-1)", container: app)`
	for _, tc := range []struct {
		runAs     *int64
		imageUser string
		want      string
	}{
		{nil, "", "container has runAsNonRoot and image will run as root" + suffix},
		{nil, "0:0", "container has runAsNonRoot and image will run as root" + suffix},
		// containerd's CRI reports a USER that is no number as a name, root included.
		{nil, "root", "container has runAsNonRoot and image has non-numeric user (root), cannot verify user is non-root" + suffix},
		{nil, "nobody", "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root" + suffix},
		{nil, "1000", ""},
		{nil, "4294967295:0", "container has runAsNonRoot and image has an invalid user id (4294967295). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive" + suffix},
		{nil, "-5", "container has runAsNonRoot and image has an invalid user id (-5). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive" + suffix},
		{ptr.To[int64](0), "1000", "container's runAsUser breaks non-root policy" + suffix},
		{ptr.To[int64](1000), "", ""},
	} {
		err := checkNonRoot(tc.runAs, tc.imageUser, pod, "app")
		if (tc.want == "") != (err == nil) || err != nil && err.Error() != tc.want {
			t.Errorf("runAsUser %v image user %q: %v, want %q", tc.runAs, tc.imageUser, err, tc.want)
		}
		if cfgErr := (*ConfigError)(nil); err != nil && !errors.As(err, &cfgErr) {
			t.Errorf("runAsUser %v image user %q: %T, want a *ConfigError (CreateContainerConfigError)", tc.runAs, tc.imageUser, err)
		}
	}
	if got := capNames([]string{"net_admin", "CAP_SYS_TIME"}); got[0] != "CAP_NET_ADMIN" || got[1] != "CAP_SYS_TIME" {
		t.Errorf("capNames = %v", got)
	}
}

// TestMissingLocalhostSeccompProfile: a Localhost profile that is not on the node fails
// the container's creation (CreateContainerError, not a config error) with containerd's
// CRI words (less the container ID, new at each try).
func TestMissingLocalhostSeccompProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.json")
	_, err := Security{Seccomp: path}.specOpts("", "web_default(uid-1)", "app")
	want := `failed to generate spec: cannot load seccomp profile "` + path + `": open ` + path + `: no such file or directory`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if cfgErr := (*ConfigError)(nil); errors.As(err, &cfgErr) {
		t.Error("a missing profile is a *ConfigError; the kubelet reports CreateContainerError")
	}
}

// TestCapabilities: capabilities add and drop as containerd's CRI plugin applies them
// (internal/cri/opts WithCapabilities): add ALL (every capability), then drop ALL, then
// the named additions, then the named drops, so a capability both added and dropped is
// dropped.
func TestCapabilities(t *testing.T) {
	defaults := []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"}
	for _, tc := range []struct {
		add, drop []string
		want      []string // in the bounding set
		not       []string
	}{
		{nil, nil, defaults, []string{"CAP_NET_ADMIN"}},
		{[]string{"NET_ADMIN"}, nil, []string{"CAP_CHOWN", "CAP_NET_ADMIN"}, nil},
		{nil, []string{"ALL"}, nil, defaults},
		{[]string{"NET_BIND_SERVICE"}, []string{"all"}, []string{"CAP_NET_BIND_SERVICE"}, defaults},
		{[]string{"NET_ADMIN"}, []string{"NET_ADMIN", "KILL"}, []string{"CAP_CHOWN"}, []string{"CAP_NET_ADMIN", "CAP_KILL"}},
		{[]string{"ALL"}, []string{"CHOWN"}, []string{"CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_KILL"}, []string{"CAP_CHOWN", "CAP_ALL"}},
	} {
		spec := &oci.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{
			Bounding: slices.Clone(defaults), Effective: slices.Clone(defaults), Permitted: slices.Clone(defaults)}}}
		if err := (Security{AddCaps: tc.add, DropCaps: tc.drop}).capabilityOpts()(context.Background(), nil, &containers.Container{}, spec); err != nil {
			t.Fatal(err)
		}
		got := spec.Process.Capabilities
		for _, c := range tc.want {
			if !slices.Contains(got.Bounding, c) || !slices.Contains(got.Effective, c) {
				t.Errorf("add %v drop %v: %v missing from %v", tc.add, tc.drop, c, got.Bounding)
			}
		}
		for _, c := range tc.not {
			if slices.Contains(got.Bounding, c) || slices.Contains(got.Effective, c) {
				t.Errorf("add %v drop %v: %v present in %v", tc.add, tc.drop, c, got.Bounding)
			}
		}
	}
}
