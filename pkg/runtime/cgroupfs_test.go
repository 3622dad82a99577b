package runtime

import (
	"context"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestCgroupfsSpec: the spec's cgroup mount and namespace, as containerd's CRI makes
// them on v1 and v2 hosts, for plain and privileged containers.
func TestCgroupfsSpec(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		unified, privileged  bool
		mounts               []Mount
		wantMount, wantCgrNS bool
	}{
		{name: "v1", wantMount: true},
		{name: "v1 privileged", privileged: true, wantMount: true},
		{name: "v2", unified: true, wantMount: true, wantCgrNS: true},
		{name: "v2 privileged", unified: true, privileged: true, wantMount: true},
		{name: "pod mounts its own", unified: true, mounts: []Mount{{HostPath: "/sys/fs/cgroup", ContainerPath: "/sys/fs/cgroup/"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
			for _, opt := range cgroupfsOpts(tc.unified, tc.privileged, tc.mounts) {
				if err := opt(context.Background(), nil, nil, s); err != nil {
					t.Fatal(err)
				}
			}
			i := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/sys/fs/cgroup" })
			switch {
			case !tc.wantMount && i >= 0:
				t.Errorf("mounts %+v: want none at /sys/fs/cgroup", s.Mounts)
			case tc.wantMount && i < 0:
				t.Errorf("mounts %+v: want a cgroup filesystem at /sys/fs/cgroup", s.Mounts)
			case tc.wantMount:
				m := s.Mounts[i]
				if m.Type != "cgroup" || m.Source != "cgroup" || !slices.Equal(m.Options[:5], []string{"nosuid", "noexec", "nodev", "relatime", "ro"}) {
					t.Errorf("mount %+v, want CRI's read-only cgroup mount", m)
				}
			}
			cgroupNS := slices.ContainsFunc(s.Linux.Namespaces, func(ns specs.LinuxNamespace) bool {
				return ns.Type == specs.CgroupNamespace && ns.Path == ""
			})
			if cgroupNS != tc.wantCgrNS {
				t.Errorf("private cgroup namespace = %v, want %v", cgroupNS, tc.wantCgrNS)
			}
		})
	}
}
