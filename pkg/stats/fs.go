package stats

import (
	"io/fs"
	"path/filepath"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fsUsage is the space and inodes a directory tree takes.
type fsUsage struct{ bytes, inodes uint64 }

func (u *fsUsage) add(o fsUsage) { u.bytes += o.bytes; u.inodes += o.inodes }

func (u fsUsage) fsStats(t metav1.Time) *statsapi.FsStats {
	return &statsapi.FsStats{Time: t, UsedBytes: ptr(u.bytes), InodesUsed: ptr(u.inodes)}
}

// diskUsage walks dir as du does: allocated blocks (not apparent sizes), each inode once.
func diskUsage(dir string) fsUsage {
	var u fsUsage
	seen := map[uint64]bool{}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while walking: count what is there
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		u.bytes += uint64(st.Blocks) * 512
		u.inodes++
		return nil
	})
	return u
}
