// Package ociimage builds single-layer container images in memory and writes them as
// OCI image-layout tarballs that `ctr import` and the containerd client can import.
// Output is deterministic: the same inputs always give the same digests.
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// Epoch is the modification time of every file in the images we build, so rebuilds give
// identical layers.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

type entry struct {
	kind   entryKind
	mode   int64
	data   []byte
	target string
}

// Layer is a root filesystem under construction. Paths are absolute or relative to the
// root ("/bin/sh" and "bin/sh" name the same file); missing parent directories are
// created with mode 0755. Modes are Unix permission bits as in chmod (0o755, 0o1777).
type Layer struct {
	entries map[string]entry
}

// NewLayer returns an empty layer.
func NewLayer() *Layer {
	return &Layer{entries: map[string]entry{}}
}

// Dir adds a directory.
func (l *Layer) Dir(name string, mode int64) {
	l.add(name, entry{kind: kindDir, mode: mode})
}

// File adds a regular file.
func (l *Layer) File(name string, mode int64, data []byte) {
	l.add(name, entry{kind: kindFile, mode: mode, data: data})
}

// Symlink adds a symbolic link pointing at target.
func (l *Layer) Symlink(name, target string) {
	l.add(name, entry{kind: kindSymlink, mode: 0o777, target: target})
}

func (l *Layer) add(name string, e entry) {
	name = clean(name)
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if _, ok := l.entries[dir]; !ok {
			l.entries[dir] = entry{kind: kindDir, mode: 0o755}
		}
	}
	l.entries[name] = e
}

func clean(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// tar returns the uncompressed layer: entries sorted by path, so parents come before
// their children, all owned by root and stamped with Epoch.
func (l *Layer) tar() ([]byte, error) {
	names := slices.Sorted(maps.Keys(l.entries))

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		e := l.entries[name]
		hdr := &tar.Header{
			Name:    name,
			Mode:    e.mode,
			ModTime: Epoch,
			Format:  tar.FormatPAX,
		}
		switch e.kind {
		case kindDir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case kindFile:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		case kindSymlink:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = e.target
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// DiffID is the digest of the uncompressed layer: equal for equal content, so a builder
// can tell that a tarball it wrote before still holds this layer.
func (l *Layer) DiffID() (digest.Digest, error) {
	data, err := l.tar()
	if err != nil {
		return "", err
	}
	return digest.FromBytes(data), nil
}
