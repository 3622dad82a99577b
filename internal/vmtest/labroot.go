package vmtest

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// LabPackages make the root of every VM that runs minik8s nodes (debootstrap's minbase plus
// these): systemd as PID 1, what the units, minilab and pods need (containerd, runc,
// Debian's CNI plugins, iptables, ipset, conntrack, iproute2, kmod), ipvsadm for the IPVS
// lab, make for `make install`, procps for the checks. One list for all such tests, so
// they share one cached image.
var LabPackages = []string{"systemd", "systemd-sysv", "udev", "dbus", "kmod", "containerd", "runc",
	"containernetworking-plugins", "iptables", "ipset", "ipvsadm", "conntrack", "iproute2", "procps", "make"}

// LabRoot returns the cached Debian bookworm image with LabPackages for kernel k
// (RootImage), building it first when missing (progress on log).
func LabRoot(ctx context.Context, k *Kernel, log io.Writer) (string, error) {
	return RootImage(ctx, DefaultRootCache, RootSpec{Suite: "bookworm", Mirror: aptMirror(), Packages: LabPackages, Kernel: k}, log)
}

// aptMirror is the first Debian mirror apt is configured with (the one that works here).
func aptMirror() string {
	for _, f := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 2 && fields[0] == "URIs:" && strings.HasSuffix(fields[1], "/debian"):
				return fields[1]
			case len(fields) >= 3 && fields[0] == "deb" && strings.HasSuffix(fields[1], "/debian"):
				return fields[1]
			}
		}
	}
	return "http://deb.debian.org/debian"
}

// LineLogger is a writer that logs each line through t.Log, prefixed (streamed with -v):
// a VM's console, or RootImage's progress.
func LineLogger(t *testing.T, prefix string) io.Writer {
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			t.Log(prefix + strings.TrimRight(sc.Text(), "\r"))
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() { pw.Close(); wg.Wait() })
	return pw
}

// LinkOrCopy puts the file src (links followed) at dst: a hard link, else a copy, executable.
func LinkOrCopy(src, dst string) error {
	src, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
