package runtime

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cgroupfsPath is where containers see their cgroups, as with containerd's CRI.
const cgroupfsPath = "/sys/fs/cgroup"

// cgroupfsOpts give a container containerd CRI's read-only cgroup filesystem at
// /sys/fs/cgroup, so it can read its own limits (memory.limit_in_bytes, memory.max):
// runc mounts each v1 controller's directory of the container's cgroup there, or on a
// unified (v2) host the cgroup2 tree seen through a private cgroup namespace. A
// privileged container keeps the host's cgroup namespace (oci.WithPrivileged then makes
// the mount writable), as with CRI. A mount the pod asks for at /sys/fs/cgroup wins.
func cgroupfsOpts(unified, privileged bool, mounts []Mount) []oci.SpecOpts {
	if slices.ContainsFunc(mounts, func(m Mount) bool { return path.Clean(m.ContainerPath) == cgroupfsPath }) {
		return nil
	}
	var opts []oci.SpecOpts
	options := []string{"nosuid", "noexec", "nodev", "relatime", "ro"}
	if unified {
		if privileged {
			// A cgroup2 mount in the host's cgroup namespace shares the host's superblock:
			// keep the host's options that another mount would otherwise strip.
			options = append(options, hostCgroup2Options()...)
		} else {
			opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
		}
	}
	return append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: cgroupfsPath, Type: "cgroup", Source: "cgroup", Options: options})
		return nil
	})
}

// unifiedCgroups tells whether the host runs cgroup v2 only.
func unifiedCgroups() bool { return cgroups.Mode() == cgroups.Unified }

// hostCgroup2Options are the options of the host's /sys/fs/cgroup that a second mount
// of the same cgroup2 superblock must repeat (nsdelegate, memory_recursiveprot).
func hostCgroup2Options() []string {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(cgroupfsPath))
	if err != nil || len(ms) == 0 {
		return nil
	}
	var out []string
	for opt := range strings.SplitSeq(ms[0].VFSOptions, ",") {
		if opt == "nsdelegate" || opt == "memory_recursiveprot" {
			out = append(out, opt)
		}
	}
	return out
}
