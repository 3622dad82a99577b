package vmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
)

// QEMU is the emulator (Debian package qemu-system-x86).
const QEMU = "qemu-system-x86_64"

// bootCmdline starts every VM's kernel command line. The kernel's crypto self-tests are
// skipped: nothing here needs them, and under TCG on a loaded host one spun a vCPU in
// cryptomgr_test from the second second of boot until the VM's 25-minute budget ran out.
const bootCmdline = "console=ttyS0 panic=-1 cryptomgr.notests"

// VM is one boot of a kernel in qemu: no network device (-nodefaults), the first serial
// port as console, no reboot (a panic or a power-off ends qemu).
type VM struct {
	Kernel    string // kernel image
	Initrd    string // initramfs, or "" when ExtraArgs give a root disk
	Cmdline   string // appended to "console=ttyS0 panic=-1 cryptomgr.notests"
	MemoryMB  int    // default 1024
	CPUs      int    // default 1 (no KVM: every vCPU is a host thread busy emulating)
	Timeout   time.Duration
	ExtraArgs []string // more qemu arguments (drives, say)
}

// Run boots the VM and copies its console to console until it powers off, panics, or the
// timeout or ctx ends (then qemu is killed and the error says so).
func (vm *VM) Run(ctx context.Context, console io.Writer) error {
	timeout := vm.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"-nodefaults", "-no-reboot", "-display", "none", "-serial", "stdio",
		"-m", strconv.Itoa(max(vm.MemoryMB, 256)), "-smp", strconv.Itoa(max(vm.CPUs, 1)),
		"-kernel", vm.Kernel, "-append", strings.TrimSpace(bootCmdline + " " + vm.Cmdline)}
	// Software emulation even where /dev/kvm exists: on this project's hosts (nested
	// virtualization) KVM guests abort on an MSR or hang at boot.
	args = append(args, "-accel", "tcg", "-cpu", "max")
	if vm.Initrd != "" {
		args = append(args, "-initrd", vm.Initrd)
	}
	args = append(args, vm.ExtraArgs...)
	cmd := exec.CommandContext(ctx, QEMU, args...)
	cmd.Stdout, cmd.Stderr = console, console
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Errorf("VM did not power off within %v: %w", timeout, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("%s: %w", QEMU, err)
	}
	return nil
}

// ExitMarker is what InitScript prints with the command's exit status.
const ExitMarker = "VMTEST-EXIT="

// InitScript is a busybox /init: mount the kernel file systems, load the modules (paths
// inside the initramfs, in order), bring lo up, run command with env, print ExitMarker and
// the status, power off.
func InitScript(modules []string, env []string, command string) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/busybox sh\n")
	b.WriteString("export PATH=/bin:/sbin:/usr/bin:/usr/sbin\n")
	b.WriteString("mkdir -p /proc /sys /dev /tmp /run /var/run\n")
	b.WriteString("mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp; mount -t tmpfs run /run\n")
	b.WriteString("echo vmtest: loading modules\n")
	for _, m := range modules {
		fmt.Fprintf(&b, "insmod %s || echo 'vmtest: insmod %s failed'\n", m, path.Base(m))
	}
	b.WriteString("ip link set lo up\n")
	for _, e := range env {
		fmt.Fprintf(&b, "export %s\n", shellQuoteAssign(e))
	}
	b.WriteString("echo vmtest: running\n")
	fmt.Fprintf(&b, "cd /; %s\n", command)
	fmt.Fprintf(&b, "echo %s$?\n", ExitMarker)
	b.WriteString("poweroff -f\n")
	return []byte(b.String())
}

func shellQuoteAssign(kv string) string {
	k, v, _ := strings.Cut(kv, "=")
	return k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// ExitStatus finds the command's exit status in the console output.
func ExitStatus(console string) (int, error) {
	m := regexp.MustCompile(ExitMarker + `(\d+)`).FindStringSubmatch(console)
	if m == nil {
		return -1, errors.New("no " + ExitMarker + " line: the command did not finish")
	}
	return strconv.Atoi(m[1])
}

// InVMEnv is set inside the VM RunTest boots.
const InVMEnv = "MINIK8S_IN_VM"

// InVM says whether this test binary runs inside RunTest's VM.
func InVM() bool { return os.Getenv(InVMEnv) == "1" }

// Options say what RunTest puts in the VM.
type Options struct {
	Modules  []string          // kernel modules by name; dependencies are added
	Binaries []string          // host programs, copied with their shared libraries
	Files    map[string]string // more files: path inside the VM -> host path (ELF ones with their libraries)
	Env      []string          // KEY=value for the test inside
	MemoryMB int               // default 1024
	Timeout  time.Duration     // default 3 minutes
}

// RunTest runs the calling test again inside a VM: the same test binary, with InVM() true
// and -test.run naming only this test. The outer test fails unless the inner one passes;
// the console is logged. A missing qemu or kernel skips the test, except under `make test`
// where it fails (internal/testenv).
func RunTest(t *testing.T, o Options) {
	t.Helper()
	testenv.Integration(t, "boots a VM")
	testenv.RequireTools(t, QEMU)
	k, err := FindKernel()
	if err != nil {
		testenv.Missing(t, "kernel for the VM: %v", err)
	}
	testenv.RequireFile(t, "/bin/busybox", "Debian package busybox-static")
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := buildTestInitramfs(k, o, t.Name(), initrd); err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	var console bytes.Buffer
	vm := &VM{Kernel: k.Image, Initrd: initrd, Cmdline: "quiet loglevel=3 rdinit=/init", MemoryMB: o.MemoryMB, Timeout: o.Timeout}
	if vm.MemoryMB == 0 {
		vm.MemoryMB = 1024
	}
	// With -v the console streams as it comes (long runs show progress); otherwise it is
	// logged at the end, which go test shows when the test fails.
	var w io.Writer = &console
	if testing.Verbose() {
		w = io.MultiWriter(&console, os.Stdout)
	}
	start := time.Now()
	runErr := vm.Run(context.Background(), w)
	out := strings.ReplaceAll(console.String(), "\r\n", "\n")
	if testing.Verbose() {
		t.Logf("VM (kernel %s) ran %v", k.Version, time.Since(start).Round(time.Millisecond))
	} else {
		t.Logf("VM console (kernel %s, %v):\n%s", k.Version, time.Since(start).Round(time.Millisecond), out)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	status, err := ExitStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if status != 0 || !strings.Contains(out, "--- PASS: "+t.Name()) {
		t.Fatalf("the test failed inside the VM (exit status %d)", status)
	}
}

func buildTestInitramfs(k *Kernel, o Options, test, file string) error {
	r := NewInitramfs()
	if err := r.Busybox("/bin/busybox"); err != nil {
		return err
	}
	mods, err := k.Modules(o.Modules...)
	if err != nil {
		return err
	}
	// Where modprobe looks, with a modules.dep naming them (all loaded at boot, so without
	// dependencies): programs that modprobe what they need (moby/ipvs does) find them.
	var inVM []string
	var dep strings.Builder
	for _, m := range mods {
		rel := "kernel/" + filepath.Base(m)
		dst := "/lib/modules/" + k.Version + "/" + rel
		if err := r.File(dst, m); err != nil {
			return err
		}
		inVM = append(inVM, dst)
		dep.WriteString(rel + ":\n")
	}
	r.Bytes("/lib/modules/"+k.Version+"/modules.dep", []byte(dep.String()), 0o644)
	for _, b := range o.Binaries {
		p, err := exec.LookPath(b)
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		if err := r.Binary(p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	for dst, src := range o.Files {
		if err := r.File(dst, src); err != nil {
			return err
		}
		if isELF(src) { // a plugin (iptables' extensions, say) needs its libraries too
			if err := r.Libraries(src); err != nil {
				return err
			}
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := r.File("/vmtest/test", exe); err != nil {
		return err
	}
	if err := r.Libraries(exe); err != nil {
		return err
	}
	env := append([]string{InVMEnv + "=1", "HOME=/tmp", "MINIK8S_MAKE_TEST=" + os.Getenv("MINIK8S_MAKE_TEST")}, o.Env...)
	cmd := fmt.Sprintf("/vmtest/test -test.run '^%s$' -test.v -test.count=1", regexp.QuoteMeta(test))
	r.Bytes("/init", InitScript(inVM, env, cmd), 0o755)
	return r.WriteFile(file)
}

func isELF(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "\x7fELF"
}
