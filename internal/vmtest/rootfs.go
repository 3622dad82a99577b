package vmtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// DefaultRootCache is where RootImage keeps the root file systems it builds, one ext4 image
// per package list (hack/install-deps.sh makes the directory; the first test builds it).
const DefaultRootCache = "/var/cache/minik8s/vmroot"

// RootSpec is a Debian root file system for a VM that boots systemd: what debootstrap
// installs (minbase plus Packages) and the kernel whose modules it gets in /lib/modules, so
// that systemd, modprobe and containerd find them.
type RootSpec struct {
	Suite    string   // e.g. "bookworm"
	Mirror   string   // e.g. "http://deb.debian.org/debian" (not part of the cache key)
	Packages []string // besides the minbase variant's
	Kernel   *Kernel
	FreeMB   int // free space in the image, for what the VM writes (default 3072)
}

// rootRecipe changes whenever the way the image is made changes, so that old images are
// not taken for new ones.
const rootRecipe = "vmroot-1"

// Key names the image: the recipe, the suite, the sorted packages and the kernel version.
func (s RootSpec) Key() string {
	pkgs := append([]string(nil), s.Packages...)
	sort.Strings(pkgs)
	h := sha256.Sum256([]byte(strings.Join([]string{rootRecipe, s.Suite, strings.Join(pkgs, ","), s.Kernel.Version}, "\n")))
	return s.Suite + "-" + hex.EncodeToString(h[:6])
}

// RootImage returns the cached image for spec in dir, building it first when missing
// (debootstrap from the mirror, a few minutes): progress goes to log. Concurrent callers
// wait for one build (a lock file in dir). The image is only ever read: boot it with
// snapshot=on (SystemdVM does), so that what a VM writes goes to a temporary overlay.
func RootImage(ctx context.Context, dir string, spec RootSpec, log io.Writer) (string, error) {
	if spec.Kernel == nil || spec.Suite == "" || spec.Mirror == "" {
		return "", fmt.Errorf("root image: suite, mirror and kernel are required")
	}
	image := filepath.Join(dir, spec.Key()+".img")
	if _, err := os.Stat(image); err == nil {
		return image, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	fmt.Fprintf(log, "vmroot: waiting for the build lock %s\n", lock.Name())
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(image); err == nil { // built while we waited
		return image, nil
	}
	start := time.Now()
	fmt.Fprintf(log, "vmroot: building %s (debootstrap %s from %s with %s; once per package list)\n",
		image, spec.Suite, spec.Mirror, strings.Join(spec.Packages, ","))
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	root := filepath.Join(work, "root")
	defer func() {
		unmountUnder(root)
		os.RemoveAll(work)
	}()
	if err := buildRoot(ctx, root, spec, log); err != nil {
		return "", err
	}
	tmp := filepath.Join(work, "root.img")
	if err := makeExt4(ctx, root, tmp, spec.FreeMB, log); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, image); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "vmroot: built %s in %v\n", image, time.Since(start).Round(time.Second))
	return image, nil
}

func buildRoot(ctx context.Context, root string, spec RootSpec, log io.Writer) error {
	args := []string{"--variant=minbase"}
	if len(spec.Packages) > 0 {
		args = append(args, "--include="+strings.Join(spec.Packages, ","))
	}
	args = append(args, spec.Suite, root, spec.Mirror)
	if err := run(ctx, log, "debootstrap", args...); err != nil {
		return fmt.Errorf("debootstrap (Debian package debootstrap): %w", err)
	}
	// The kernel's modules, for modprobe (br_netfilter, overlay, veth, the netfilter ones).
	mods := filepath.Join(root, "lib", "modules")
	if err := os.MkdirAll(mods, 0o755); err != nil {
		return err
	}
	src := filepath.Join(spec.Kernel.Root, "lib", "modules", spec.Kernel.Version)
	if err := run(ctx, log, "cp", "-a", src, mods+"/"); err != nil {
		return err
	}
	if err := run(ctx, log, "chroot", root, "depmod", "-a", spec.Kernel.Version); err != nil {
		return err
	}
	// A serial console without a login prompt (the test drives the VM through a unit of its
	// own), no timers that would start apt, an empty machine-id (systemd makes one at boot).
	for _, unit := range []string{"serial-getty@.service", "getty@.service", "apt-daily.timer",
		"apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "systemd-networkd-wait-online.service"} {
		link := filepath.Join(root, "etc/systemd/system", unit)
		os.Remove(link)
		if err := os.Symlink("/dev/null", link); err != nil {
			return err
		}
	}
	files := map[string]string{
		"etc/machine-id": "",
		"etc/fstab":      "/dev/vda / ext4 rw,relatime 0 1\n",
		"etc/hosts":      "127.0.0.1 localhost\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(root, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		os.Remove(d)
	}
	return nil
}

// makeExt4 writes the tree into a new ext4 image (mkfs.ext4 -d: no mount needed).
func makeExt4(ctx context.Context, root, image string, freeMB int, log io.Writer) error {
	if freeMB <= 0 {
		freeMB = 3072
	}
	out, err := exec.CommandContext(ctx, "du", "-sm", "--apparent-size", root).Output()
	if err != nil {
		return fmt.Errorf("du %s: %w", root, err)
	}
	var usedMB int
	fmt.Sscan(string(out), &usedMB)
	size := fmt.Sprintf("%dM", usedMB*5/4+freeMB)
	fmt.Fprintf(log, "vmroot: %d MB of files, image of %s\n", usedMB, size)
	return run(ctx, log, "mkfs.ext4", "-q", "-F", "-L", "vmroot", "-d", root, image, size)
}

// run runs a command, its output line by line to log (debootstrap prints its progress).
func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintf(log, "vmroot: %s: %s\n", name, sc.Text())
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// unmountUnder unmounts whatever a failed debootstrap left mounted in the tree (proc, sys).
func unmountUnder(root string) {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], root+"/") {
			points = append(points, f[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points))) // children first
	for _, p := range points {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}
