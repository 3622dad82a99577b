package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// checkHostPath applies a hostPath volume's type: the *OrCreate types make what is
// missing, the others check what is there, with the kubelet's messages (checkTypeInternal:
// a missing path is "not a file" as much as one of another kind).
func checkHostPath(h *corev1.HostPathVolumeSource) error {
	if !filepath.IsAbs(h.Path) {
		return fmt.Errorf("hostPath %q is not an absolute path", h.Path)
	}
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	fi, err := os.Stat(h.Path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	switch {
	case typ == corev1.HostPathUnset && !missing:
		return nil
	// No type: the kubelet checks nothing, and the container runtime makes a missing
	// mount source a directory (containerd's CRI, as Docker did).
	case missing && (typ == corev1.HostPathUnset || typ == corev1.HostPathDirectoryOrCreate):
		return os.MkdirAll(h.Path, 0o755)
	case missing && typ == corev1.HostPathFileOrCreate:
		// The file only, not its directory (the kubelet's makeFile).
		f, err := os.OpenFile(h.Path, os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	var mode fs.FileMode
	if fi != nil {
		mode = fi.Mode()
	}
	want := map[corev1.HostPathType]struct {
		ok   bool
		what string
	}{
		corev1.HostPathDirectoryOrCreate: {!missing && mode.IsDir(), "a directory"},
		corev1.HostPathDirectory:         {!missing && mode.IsDir(), "a directory"},
		corev1.HostPathFileOrCreate:      {!missing && mode.IsRegular(), "a file"},
		corev1.HostPathFile:              {!missing && mode.IsRegular(), "a file"},
		corev1.HostPathSocket:            {mode&fs.ModeSocket != 0, "a socket file"},
		corev1.HostPathCharDev:           {mode&fs.ModeCharDevice != 0, "a character device"},
		corev1.HostPathBlockDev:          {mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0, "a block device"},
	}[typ]
	if want.what == "" {
		return fmt.Errorf("%s is an invalid volume type", typ)
	}
	if !want.ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", h.Path, want.what)
	}
	return nil
}
