package vmtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Share is a host directory the VM mounts over 9p (virtio), read-only unless Writable.
type Share struct {
	HostDir  string
	Writable bool
}

// SystemdVM boots a root image (RootImage) with systemd as PID 1: an initramfs of busybox
// and the modules for the disk and 9p mounts the image and the shares, adds a oneshot unit
// that runs Command once the system is up (multi-user.target), and switches to the image's
// /lib/systemd/systemd. Command's output goes to the console, then ExitMarker and its
// status; then the VM powers off at once (systemctl poweroff --force --force: no unmounting,
// which can hang on 9p; writes to a writable share are synchronous, cache=none). The image is opened with
// snapshot=on: the VM's writes go to a temporary file qemu drops at exit.
type SystemdVM struct {
	Kernel   *Kernel
	Image    string
	Hostname string
	Shares   map[string]Share // mount point inside the VM -> host directory; parents are mounted first
	NICs     []NIC            // network cards (none: no network device at all)
	Command  string           // run by /bin/sh inside the VM as root, after multi-user.target
	MemoryMB int              // default 2048
	CPUs     int              // default 2
	Timeout  time.Duration    // default 8 minutes
}

// NIC is a virtio network card whose Ethernet frames qemu sends to the unix datagram socket
// Remote and receives on Local: two VMs whose cards name each other's sockets share a cable
// (Wire). No host interface, tap or bridge takes part: nothing the VMs send is routed. A
// card without sockets is on no cable at all: what it sends is lost (a stand-in for an
// interface whose far end the test must not reach, such as Vagrant's NAT one).
type NIC struct {
	MAC           string
	Local, Remote string // unix socket paths; both empty: no cable
}

// Wire is a point-to-point Ethernet cable between two VMs: the two ends, with the given MAC
// addresses, as sockets in dir (keep dir's path short: a unix socket's path has 107 bytes at
// most). qemu makes the sockets; remove dir when both VMs have ended.
func Wire(dir, macA, macB string) (a, b NIC) {
	sa, sb := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	return NIC{MAC: macA, Local: sa, Remote: sb}, NIC{MAC: macB, Local: sb, Remote: sa}
}

// systemdModules are what the initramfs loads to mount the root and the shares, and the
// network cards' driver: loaded there, the cards exist before systemd starts the guest's
// command (left to udev, a CI run once configured eth0 before it appeared).
var systemdModules = []string{"crc32c_generic", "virtio_pci", "virtio_blk", "ext4", "9pnet_virtio", "9p", "virtio_net"}

// Run boots the VM, streaming the console to console, and returns Command's exit status
// (-1 when it did not finish).
func (s *SystemdVM) Run(ctx context.Context, console io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "vmtest-systemd-")
	if err != nil {
		return -1, err
	}
	defer os.RemoveAll(dir)
	initrd := filepath.Join(dir, "initrd.cpio")
	points, err := s.initramfs(initrd)
	if err != nil {
		return -1, fmt.Errorf("initramfs: %w", err)
	}
	args := []string{"-drive", "file=" + s.Image + ",format=raw,if=virtio,snapshot=on"}
	for i, p := range points {
		sh := s.Shares[p]
		opt := fmt.Sprintf("local,path=%s,mount_tag=share%d,security_model=passthrough", sh.HostDir, i)
		if !sh.Writable {
			opt += ",readonly=on"
		}
		args = append(args, "-virtfs", opt)
	}
	for i, n := range s.NICs {
		netdev := fmt.Sprintf("dgram,id=nic%d,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s", i, n.Local, n.Remote)
		if n.Local == "" {
			netdev = fmt.Sprintf("hubport,id=nic%d,hubid=%d", i, 100+i) // a hub of its own: no other port
		}
		args = append(args, "-netdev", netdev, "-device", fmt.Sprintf("virtio-net-pci,netdev=nic%d,mac=%s", i, n.MAC))
	}
	vm := &VM{Kernel: s.Kernel.Image, Initrd: initrd, MemoryMB: s.MemoryMB, CPUs: s.CPUs, Timeout: s.Timeout, ExtraArgs: args,
		// The console shows the kernel's warnings, systemd's errors and the command's output.
		// net.ifnames=0: the cards are eth0, eth1, ... in order, as in Vagrant's Debian boxes.
		Cmdline: "rdinit=/init loglevel=4 net.ifnames=0 systemd.show_status=error systemd.log_level=warning systemd.hostname=" + s.Hostname}
	if vm.MemoryMB == 0 {
		vm.MemoryMB = 2048
	}
	if vm.CPUs == 0 {
		vm.CPUs = 2
	}
	if vm.Timeout == 0 {
		vm.Timeout = 8 * time.Minute
	}
	var out strings.Builder
	runErr := vm.Run(ctx, io.MultiWriter(console, &out))
	status, statusErr := ExitStatus(strings.ReplaceAll(out.String(), "\r\n", "\n"))
	if runErr != nil {
		return status, runErr
	}
	return status, statusErr
}

func (s *SystemdVM) initramfs(file string) (points []string, err error) {
	if s.Hostname == "" {
		s.Hostname = "vmtest"
	}
	r := NewInitramfs()
	if err := r.Busybox("/bin/busybox"); err != nil {
		return nil, err
	}
	mods, err := s.Kernel.Modules(systemdModules...)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("#!/bin/busybox sh\nexport PATH=/bin\nset -e\n")
	b.WriteString("mkdir -p /proc /sys /dev\nmount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev\n")
	for _, m := range mods {
		dst := "/modules/" + filepath.Base(m)
		if err := r.File(dst, m); err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "insmod %s\n", dst)
	}
	b.WriteString("echo 'vmtest: mounting the root image'\nmkdir -p /newroot\nmount -t ext4 /dev/vda /newroot\n")
	points = slices.Sorted(maps.Keys(s.Shares))
	for i, p := range points {
		opts := "trans=virtio,version=9p2000.L,msize=524288,cache=loose"
		if !s.Shares[p].Writable {
			opts += ",ro"
		} else {
			opts = strings.Replace(opts, "cache=loose", "cache=none", 1) // the host reads what the VM writes
		}
		fmt.Fprintf(&b, "mkdir -p /newroot%s\nmount -t 9p -o %s share%d /newroot%s\n", p, opts, i, p)
	}
	// The unit that runs the command once the system is up, then powers off.
	// Then power off at once (as poweroff -ff: no unmounting, which can hang on 9p; writes to a
	// writable share are synchronous, cache=none), not through the unit's SuccessAction, which
	// waits for the unit to stop and that for every process it left.
	r.Bytes("/vmtest.sh", []byte("#!/bin/sh\n"+s.Command+"\necho "+ExitMarker+"$?\nsync\nsystemctl poweroff --force --force\n"), 0o755)
	r.Bytes("/vmtest.service", []byte(`[Unit]
Description=vmtest: the test's command
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/libexec/vmtest.sh
StandardOutput=tty
StandardError=inherit
TTYPath=/dev/ttyS0
TTYReset=no
TTYVHangup=no
FailureAction=poweroff-immediate
[Install]
WantedBy=multi-user.target
`), 0o644)
	b.WriteString(`mkdir -p /newroot/usr/local/libexec /newroot/etc/systemd/system/multi-user.target.wants
cp /vmtest.sh /newroot/usr/local/libexec/vmtest.sh
cp /vmtest.service /newroot/etc/systemd/system/vmtest.service
ln -sf /etc/systemd/system/vmtest.service /newroot/etc/systemd/system/multi-user.target.wants/vmtest.service
umount /proc /sys /dev
echo 'vmtest: starting systemd'
exec switch_root /newroot /lib/systemd/systemd
`)
	r.Bytes("/init", []byte(b.String()), 0o755)
	return points, r.WriteFile(file)
}
