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
// missing, the others check what is there, with the kubelet's messages.
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
	switch typ {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if missing {
			return os.MkdirAll(h.Path, 0o755)
		}
		if !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", h.Path)
		}
		return nil
	case corev1.HostPathFileOrCreate:
		if missing {
			if err := os.MkdirAll(filepath.Dir(h.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if f != nil {
				f.Close()
			}
			return nil
		}
		if fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", h.Path)
		}
		return nil
	}
	if missing {
		return fmt.Errorf("hostPath type check failed: %s does not exist", h.Path)
	}
	want := map[corev1.HostPathType]struct {
		ok   bool
		what string
	}{
		corev1.HostPathDirectory: {fi.IsDir(), "a directory"},
		corev1.HostPathFile:      {fi.Mode().IsRegular(), "a file"},
		corev1.HostPathSocket:    {fi.Mode()&fs.ModeSocket != 0, "a socket file"},
		corev1.HostPathCharDev:   {fi.Mode()&fs.ModeCharDevice != 0, "a character device"},
		corev1.HostPathBlockDev:  {fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0, "a block device"},
	}[typ]
	if want.what == "" {
		return fmt.Errorf("hostPath %s: unknown type %q", h.Path, typ)
	}
	if !want.ok {
		return fmt.Errorf("hostPath type check failed: %s is not %s", h.Path, want.what)
	}
	return nil
}
