package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File is one file of a configMap, secret, downwardAPI or projected volume.
type File struct {
	Data []byte
	Mode fs.FileMode
	UID  *int64 // its owner, when not root (a token's, as the kubelet's FsUser)
}

// dataLink is the symlink to the current version of a volume's files.
const dataLink = "..data"

// writeAtomically makes dir show exactly payload (relative path -> file), switching from
// the old contents to the new in one step, as the kubelet's atomic writer does: the files
// live in a hidden timestamped directory, dir/..data links to it, and each top-level name
// is a symlink through ..data. A container reading the volume sees the old files or the
// new ones, never a mix. It reports whether anything changed.
func writeAtomically(dir string, files map[string]File) (bool, error) {
	payload := make(map[string]File, len(files))
	for p, f := range files {
		if err := checkPayloadPath(p); err != nil {
			return false, err
		}
		payload[filepath.Clean(p)] = f // "./a" is a, as the kubelet's atomic writer has it
	}
	if current, err := os.Readlink(filepath.Join(dir, dataLink)); err == nil && sameContents(filepath.Join(dir, current), payload) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	version, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(version, 0o755); err != nil {
		return false, err
	}
	for p, f := range payload {
		path := filepath.Join(version, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(path, f.Data, f.Mode); err != nil {
			return false, err
		}
		if err := os.Chmod(path, f.Mode); err != nil { // WriteFile's mode is subject to the umask
			return false, err
		}
		if f.UID != nil {
			if err := os.Lchown(path, int(*f.UID), -1); err != nil {
				return false, err
			}
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	tmp := filepath.Join(dir, "..data_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}

	// User-visible names: one symlink per top-level entry, through ..data.
	top := map[string]bool{}
	for p := range payload {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
				return false, err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return false, err
			}
		}
	}
	if old != "" && old != filepath.Base(version) {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return false, err
		}
	}
	return true, nil
}

// checkPayloadPath refuses paths that could leave the volume or hide among its own
// dot-dot entries (the API validates them too; a volume must not trust that).
func checkPayloadPath(p string) error {
	switch {
	case p == "" || filepath.IsAbs(p):
		return fmt.Errorf("volume file path %q must be relative and not empty", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("volume file path %q must not start with '..'", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("volume file path %q must not contain '..'", p)
		}
	}
	return nil
}

// sameContents: the version directory holds exactly payload, with the same modes.
func sameContents(version string, payload map[string]File) bool {
	n := 0
	err := filepath.WalkDir(version, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(version, path)
		f, ok := payload[rel]
		if !ok {
			return fs.ErrExist
		}
		// Contents only, as the kubelet's atomic writer: a pod's modes never change
		// (its volumes are immutable), and fsGroup changes the ones written.
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.Data) {
			return fs.ErrExist
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}
