package stats

import (
	"fmt"
	"math"
	"os"
	"path"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// usage is one reading of a cgroup: cumulative CPU time and the memory figures the
// kubelet reports, in containerd's cgroups terms.
type usage struct {
	cpuNanos        uint64
	memoryUsage     uint64
	workingSet      uint64 // usage less inactive file pages, what the kubelet evicts on
	rss             uint64
	pageFaults      uint64
	majorPageFaults uint64
	pids            uint64
	memoryLimit     uint64 // the cgroup's own limit; unlimited reads as a huge number
}

// cgroupReader reads cgroups through github.com/containerd/cgroups, only the cpuacct,
// memory and pids controllers on cgroup v1 (Stat would otherwise read every controller).
type cgroupReader struct {
	unified   bool
	hierarchy cgroup1.Hierarchy
}

func newCgroupReader() *cgroupReader {
	r := &cgroupReader{unified: cgroups.Mode() == cgroups.Unified}
	root := "/sys/fs/cgroup"
	r.hierarchy = func() ([]cgroup1.Subsystem, error) {
		// Swap and kernel memory are not reported: their 12 files per cgroup are skipped.
		memory := cgroup1.NewMemory(root, cgroup1.IgnoreModules("memsw", "kmem", "kmem.tcp"))
		return []cgroup1.Subsystem{cgroup1.NewCpuacct(root), memory, cgroup1.NewPids(root)}, nil
	}
	return r
}

// read reads the cgroup at path (relative to each hierarchy's root).
func (r *cgroupReader) read(p string) (usage, error) {
	if r.unified {
		m, err := cgroup2.Load(p)
		if err != nil {
			return usage{}, fmt.Errorf("cgroup %s: %w", p, err)
		}
		st, err := m.Stat()
		if err != nil {
			return usage{}, fmt.Errorf("cgroup %s: %w", p, err)
		}
		var u usage
		if st.CPU != nil {
			u.cpuNanos = st.CPU.UsageUsec * 1000
		}
		if mem := st.Memory; mem != nil {
			u.memoryUsage, u.rss, u.pageFaults, u.majorPageFaults = mem.Usage, mem.Anon, mem.Pgfault, mem.Pgmajfault
			u.memoryLimit = mem.UsageLimit
			u.workingSet = sub(mem.Usage, mem.InactiveFile)
		}
		if st.Pids != nil {
			u.pids = st.Pids.Current
		}
		return u, nil
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(p), cgroup1.WithHierarchy(r.hierarchy))
	if err != nil {
		return usage{}, fmt.Errorf("cgroup %s: %w", p, err)
	}
	st, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return usage{}, fmt.Errorf("cgroup %s: %w", p, err)
	}
	var u usage
	if st.CPU != nil && st.CPU.Usage != nil {
		u.cpuNanos = st.CPU.Usage.Total
	}
	if mem := st.Memory; mem != nil {
		if mem.Usage != nil {
			u.memoryUsage, u.memoryLimit = mem.Usage.Usage, mem.Usage.Limit
		}
		u.rss, u.pageFaults, u.majorPageFaults = mem.TotalRSS, mem.TotalPgFault, mem.TotalPgMajFault
		u.workingSet = sub(u.memoryUsage, mem.TotalInactiveFile)
	}
	if st.Pids != nil {
		u.pids = st.Pids.Current
	}
	return u, nil
}

// CgroupMemoryLimit is the memory limit of the cgroup at path (a lab node's, minilet
// --node-cgroup); ok is false when it has none.
func CgroupMemoryLimit(path string) (limit uint64, ok bool, err error) {
	u, err := newCgroupReader().read(path)
	if err != nil {
		return 0, false, err
	}
	return u.memoryLimit, u.memoryLimit > 0 && u.memoryLimit < math.MaxInt64/2, nil
}

// processCgroup is the cgroup of process pid (the memory controller's on v1, where runc
// puts a container at the same path in every controller).
func (r *cgroupReader) processCgroup(pid uint32) (string, error) {
	file := fmt.Sprintf("/proc/%d/cgroup", pid)
	if r.unified {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				return p, nil
			}
		}
		return "", fmt.Errorf("%s names no cgroup v2 path", file)
	}
	paths, err := cgroup1.ParseCgroupFile(file)
	if err != nil {
		return "", err
	}
	if p := paths["memory"]; p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%s names no memory cgroup", file)
}

// podCgroup is the pod's cgroup: the parent of its containers' (pkg/agent/cm's layout).
func podCgroup(containerCgroup string) string { return path.Dir(containerCgroup) }

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}
