package vmtest

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Initramfs is the content of an initramfs (a newc cpio archive the kernel unpacks into its
// first root): directories, files and symlinks by their path inside it.
type Initramfs struct {
	entries map[string]entry
}

type entry struct {
	mode   uint32 // file type and permissions, as in st_mode
	src    string // file content from this host path, or
	data   []byte // this content (files) or link target (symlinks)
	isLink bool
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
)

// NewInitramfs starts an empty one.
func NewInitramfs() *Initramfs { return &Initramfs{entries: map[string]entry{}} }

func clean(dst string) string { return strings.TrimPrefix(path.Clean("/"+dst), "/") }

// Dir adds a directory (and its parents).
func (r *Initramfs) Dir(dst string) {
	dst = clean(dst)
	if dst == "" || dst == "." {
		return
	}
	if _, ok := r.entries[dst]; ok {
		return
	}
	r.Dir(path.Dir(dst))
	r.entries[dst] = entry{mode: modeDir | 0o755}
}

// Bytes adds a file with the given content.
func (r *Initramfs) Bytes(dst string, data []byte, perm os.FileMode) {
	dst = clean(dst)
	r.Dir(path.Dir(dst))
	r.entries[dst] = entry{mode: modeFile | uint32(perm.Perm()), data: data}
}

// File adds a copy of the host file src (symlinks followed) at dst, keeping its permissions.
func (r *Initramfs) File(dst, src string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	dst = clean(dst)
	r.Dir(path.Dir(dst))
	r.entries[dst] = entry{mode: modeFile | uint32(st.Mode().Perm()), src: src}
	return nil
}

// Symlink adds a symbolic link dst -> target.
func (r *Initramfs) Symlink(dst, target string) {
	dst = clean(dst)
	r.Dir(path.Dir(dst))
	r.entries[dst] = entry{mode: modeLink | 0o777, data: []byte(target), isLink: true}
}

// Binary adds the host program src at the same path, with the shared libraries and the
// dynamic loader it needs (a static binary needs none).
func (r *Initramfs) Binary(src string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if err := r.File(src, real); err != nil {
		return err
	}
	return r.Libraries(real)
}

// Libraries adds the shared libraries (and the loader) an ELF file needs, as ldd lists them.
func (r *Initramfs) Libraries(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC
	}
	f.Close()
	if !dynamic {
		return nil
	}
	out, err := exec.Command("ldd", file).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", file, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		var lib string
		switch {
		case len(fields) >= 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "/"):
			lib = fields[2]
		case len(fields) >= 1 && strings.HasPrefix(fields[0], "/"):
			lib = fields[0] // the loader
		default:
			continue // linux-vdso
		}
		if _, done := r.entries[clean(lib)]; done {
			continue
		}
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return err
		}
		if err := r.File(lib, real); err != nil {
			return err
		}
	}
	return sc.Err()
}

// Busybox adds a static busybox as /bin/busybox with a link for each of its applets in
// /bin (sh, mount, insmod, ip, poweroff, ...).
func (r *Initramfs) Busybox(src string) error {
	if err := r.File("/bin/busybox", src); err != nil {
		return fmt.Errorf("busybox (Debian package busybox-static): %w", err)
	}
	out, err := exec.Command(src, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", src, err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			if _, exists := r.entries[clean("/bin/"+applet)]; !exists {
				r.Symlink("/bin/"+applet, "busybox")
			}
		}
	}
	return nil
}

// Write writes the archive (uncompressed newc cpio: the kernel unpacks it fastest, which
// matters without KVM). Parents come before their children.
func (r *Initramfs) Write(w io.Writer) error {
	names := slices.Sorted(maps.Keys(r.entries)) // a parent sorts before its children
	bw := bufio.NewWriterSize(w, 1<<20)
	ino := uint32(1)
	for _, n := range names {
		e := r.entries[n]
		data := e.data
		if e.src != "" {
			var err error
			if data, err = os.ReadFile(e.src); err != nil {
				return err
			}
		}
		if err := writeEntry(bw, ino, e.mode, n, data); err != nil {
			return err
		}
		ino++
	}
	if err := writeEntry(bw, ino, 0, "TRAILER!!!", nil); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteFile writes the archive to a file.
func (r *Initramfs) WriteFile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := r.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeEntry(w *bufio.Writer, ino, mode uint32, name string, data []byte) error {
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	// newc: magic, then 13 eight-digit hex fields: ino mode uid gid nlink mtime filesize
	// devmajor devminor rdevmajor rdevminor namesize check.
	if _, err := fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0); err != nil {
		return err
	}
	w.WriteString(name)
	w.WriteByte(0)
	pad(w, 110+len(name)+1)
	w.Write(data)
	pad(w, len(data))
	return nil
}

func pad(w *bufio.Writer, n int) {
	for ; n%4 != 0; n++ {
		w.WriteByte(0)
	}
}
