package systemd_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/testenv"
	"github.com/minik8s/minik8s/pkg/vmtest"
)

// vmPackages make the VM's root (debootstrap's minbase plus these): systemd as PID 1, what
// the units and pods need (containerd, runc, Debian's CNI plugins, iptables, ipset,
// conntrack, iproute2, kmod), make for `make install`, procps for the checks.
var vmPackages = []string{"systemd", "systemd-sysv", "udev", "dbus", "kmod", "containerd", "runc",
	"containernetworking-plugins", "iptables", "ipset", "conntrack", "iproute2", "procps", "make"}

// TestUnitsUnderSystemdInVM boots Debian's kernel in qemu with a Debian root file system
// (debootstrap, cached per package list) and systemd as PID 1, and there runs
// vagrant/provision/control-plane.sh as Vagrant would on the control plane VM: it installs
// our binaries and units with `make install`, writes /etc/minik8s/*.env, and starts
// miniapi, minilet and miniproxy through systemd. Then (vmGuestScript): each unit is
// active (Type=notify: only after READY=1) and enabled; a pod runs (kubectl); `systemctl
// restart minilet` gives minilet a new process and leaves the pod's container process as
// it was (KillMode=process); minilet's logs are in the journal; the join material for the
// workers is there (a bootstrap token Secret in kubeadm's format, a bootstrap kubeconfig,
// node kubeconfigs); and vagrant/provision/smoke.sh passes on this one-node cluster.
func TestUnitsUnderSystemdInVM(t *testing.T) {
	testenv.RequireRoot(t, "debootstrap, mkfs.ext4 -d and qemu's 9p passthrough need root")
	testenv.RequireTools(t, vmtest.QEMU, "debootstrap", "mkfs.ext4", "chroot", "du", "cp")
	testenv.RequireFile(t, "/bin/busybox", "Debian package busybox-static")
	k, err := vmtest.FindKernel()
	if err != nil {
		testenv.Missing(t, "kernel for the VM: %v", err)
	}
	bin := binDir(t)
	images := os.Getenv("MINIK8S_IMAGES")
	if images == "" {
		images = "../images/out"
	}
	images, _ = filepath.Abs(images)
	for _, img := range []string{"netexec", "busybox"} {
		testenv.RequireFile(t, filepath.Join(images, img+".tar"), img+" image (make build)")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		kubectl = filepath.Join(bin, "kubectl")
		testenv.RequireFile(t, kubectl, "kubectl (make kubectl)")
	}
	repo, _ := filepath.Abs("..")

	log := lineLogger(t, "")
	image, err := vmtest.RootImage(context.Background(), vmtest.DefaultRootCache, vmtest.RootSpec{
		Suite: "bookworm", Mirror: aptMirror(), Packages: vmPackages, Kernel: k}, log)
	if err != nil {
		t.Fatalf("root image: %v", err)
	}

	// The VM's /minik8s/bin: the built binaries and kubectl (links, else copies).
	stage, out := t.TempDir(), t.TempDir()
	for _, c := range append(append([]string(nil), commands...), "kubectl") {
		src := filepath.Join(bin, c)
		if c == "kubectl" {
			src = kubectl
		}
		if err := linkOrCopy(src, filepath.Join(stage, c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "guest.sh"), []byte(vmGuestScript), 0o755); err != nil {
		t.Fatal(err)
	}
	timeout := 15 * time.Minute
	deadline := strconv.FormatInt(time.Now().Add(timeout).Unix(), 10)
	if err := os.WriteFile(filepath.Join(out, "deadline"), []byte(deadline), 0o644); err != nil {
		t.Fatal(err)
	}
	vm := &vmtest.SystemdVM{
		Kernel: k, Image: image, Hostname: "control-plane",
		Shares: map[string]vmtest.Share{
			"/vagrant":        {HostDir: repo},
			"/minik8s/bin":    {HostDir: stage},
			"/minik8s/images": {HostDir: images},
			"/vmtest-out":     {HostDir: out, Writable: true},
		},
		Command:  "/bin/bash /vmtest-out/guest.sh",
		MemoryMB: 2048, CPUs: 2, Timeout: timeout,
	}
	start, cpu := time.Now(), childrenCPU()
	status, runErr := vm.Run(context.Background(), lineLogger(t, "vm: "))
	t.Logf("VM (kernel %s, image %s): %v, qemu used %v of CPU", k.Version, filepath.Base(image),
		time.Since(start).Round(time.Second), (childrenCPU() - cpu).Round(time.Second))

	defer func() {
		if t.Failed() {
			if j, err := os.ReadFile(filepath.Join(out, "journal.txt")); err == nil {
				t.Logf("the daemons' journal (last lines):\n%s", tail(string(j), 80))
			}
		}
	}()
	results := readResults(t, filepath.Join(out, "results"))
	if runErr != nil {
		t.Errorf("VM: %v (guest exit status %d)", runErr, status)
	}
	if results["out-of-time"] == "yes" {
		t.Errorf("the checks ran out of time (%v for the VM in all): the last result is the last step done", timeout)
	}
	if len(results) == 0 {
		t.FailNow() // the console above says how far it got
	}
	want := func(key, value, what string) {
		t.Helper()
		if got, ok := results[key]; !ok {
			t.Errorf("%s: not checked (no %s in the results: the guest script stopped before)", what, key)
		} else if got != value {
			t.Errorf("%s: %s=%q, want %q", what, key, got, value)
		}
	}
	want("provision", "0", "vagrant/provision/control-plane.sh")
	for _, u := range []string{"containerd", "miniapi", "minilet", "miniproxy"} {
		want("active-"+u, "active", "systemctl is-active "+u)
	}
	for _, u := range daemons {
		want("enabled-"+u, "enabled", "systemctl is-enabled "+u)
	}
	want("pod-phase", "Running", "the pod web")
	want("restart-minilet", "0", "systemctl restart minilet")
	want("minilet-new-pid", "yes", "minilet's MainPID after the restart (a new process)")
	if before := results["container-pid-before"]; before == "" || before == "0" {
		t.Errorf("no container process found for the pod before the restart (%q)", before)
	} else {
		want("container-pid-after", before, "the pod's container process after systemctl restart minilet (KillMode=process)")
	}
	want("container-status-after", "RUNNING", "the pod's container task after the restart")
	want("pod-ready-after", "0", "the pod Ready after the restart")
	want("pod-restarts-after", "0", "the pod's restartCount after the restart")
	if n, _ := strconv.Atoi(results["journal-minilet-lines"]); n == 0 {
		t.Errorf("journalctl -u minilet has no lines (%q): logs do not reach journald", results["journal-minilet-lines"])
	}
	want("bootstrap-secret-type", "bootstrap.kubernetes.io/token", "the bootstrap token Secret's type")
	want("smoke", "0", "vagrant/provision/smoke.sh (one node)")

	// The join material, as the workers read it from the share.
	join := filepath.Join(out, "join")
	boot, err := os.ReadFile(filepath.Join(join, "bootstrap.kubeconfig"))
	token, _ := os.ReadFile(filepath.Join(join, "token"))
	switch {
	case err != nil:
		t.Errorf("bootstrap kubeconfig: %v", err)
	case !strings.Contains(string(boot), "server: https://192.168.56.10:6443") ||
		!strings.Contains(string(boot), "token: "+strings.TrimSpace(string(token))) || len(strings.TrimSpace(string(token))) != 23:
		t.Errorf("bootstrap kubeconfig lacks the server or the token %q:\n%s", token, boot)
	}
	for _, f := range []string{"ready", "ca.crt", "miniproxy.kubeconfig", "worker-1.kubeconfig", "worker-2.kubeconfig",
		"worker-1-pki/minilet.crt", "worker-2-pki/minilet.key"} {
		if _, err := os.Stat(filepath.Join(join, f)); err != nil {
			t.Errorf("join material: %v", err)
		}
	}
}

// vmGuestScript runs inside the VM as root, started by systemd once multi-user.target is
// reached. It records each check as key=value in /vmtest-out/results (a 9p share the test
// reads) and prints its progress on the console.
const vmGuestScript = `#!/bin/bash
exec 2>&1
out=/vmtest-out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
result() { echo "$1=$2" >>$out/results; echo "vmtest: RESULT $1=$2"; }
step() { echo "vmtest: $(date +%T) $*"; }
if [[ ${1:-} != checks ]]; then
  # The checks get the time left before the test's deadline (the VM's clock is the host's),
  # less a minute for the journal and the power-off.
  budget=$(($(cat $out/deadline) - $(date +%s) - 60))
  step "booted; $budget s left for the checks"
  timeout $budget bash "$0" checks
  rc=$?
  ((rc == 124)) && result out-of-time yes
  journalctl -u containerd -u miniapi -u minilet -u miniproxy --no-pager -o short-monotonic >$out/journal.txt 2>&1
  exit $rc
fi

# As the Vagrantfile sets them for the control plane; the join files go to the test's share.
export SRC=/vagrant BIN=/minik8s/bin IMAGES=/minik8s/images JOIN_DIR=$out/join
export NODE_IP=192.168.56.10 NODE_NAME=control-plane CONTROL_PLANE_IP=192.168.56.10 WAIT_SECONDS=240
# The VM has no network device: the private network's address goes on a dummy link.
modprobe dummy && ip link add eth1 type dummy && ip addr add $NODE_IP/24 dev eth1 && ip link set eth1 up
ip route add default dev eth1

step "vagrant/provision/control-plane.sh"
bash /vagrant/vagrant/provision/control-plane.sh
rc=$?
result provision $rc
for u in containerd miniapi minilet miniproxy; do result active-$u "$(systemctl is-active $u)"; done
for u in miniapi minilet miniproxy; do result enabled-$u "$(systemctl is-enabled $u)"; done
[[ $rc == 0 ]] || exit 1
export KUBECONFIG=/var/lib/miniapi/admin.kubeconfig
result bootstrap-secret-type "$(kubectl -n kube-system get secret bootstrap-token-$(cut -d. -f1 $JOIN_DIR/token) -o jsonpath='{.type}')"

step "a pod (tolerating the control plane's taint)"
kubectl apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  tolerations: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
  containers:
  - {name: netexec, image: localhost/minik8s/netexec:v1, imagePullPolicy: IfNotPresent}
YAML
kubectl wait --for=condition=Ready pod/web --timeout=180s
result pod-phase "$(kubectl get pod web -o jsonpath='{.status.phase}')"
cid=$(kubectl get pod web -o jsonpath='{.status.containerStatuses[0].containerID}')
cid=${cid#containerd://}
task() { ctr -n minilet task ls | awk -v id="$cid" '$1 == id {print $'"$1"'}'; }
result container-pid-before "$(task 2)"
let_pid=$(systemctl show -p MainPID --value minilet)

step "systemctl restart minilet"
timeout 180 systemctl restart minilet
result restart-minilet $?
new_pid=$(systemctl show -p MainPID --value minilet)
[[ $new_pid != 0 && $new_pid != "$let_pid" ]] && result minilet-new-pid yes || result minilet-new-pid "no ($let_pid -> $new_pid)"
result container-pid-after "$(task 2)"
result container-status-after "$(task 3)"
kubectl wait --for=condition=Ready pod/web --timeout=60s
result pod-ready-after $?
result pod-restarts-after "$(kubectl get pod web -o jsonpath='{.status.containerStatuses[0].restartCount}')"
result journal-minilet-lines "$(journalctl -u minilet -o cat --no-pager | wc -l)"

step "vagrant/provision/smoke.sh on this one node (the control plane's taint lifted)"
kubectl taint node control-plane node-role.kubernetes.io/control-plane:NoSchedule-
EXPECT_NODES=1 WAIT_SECONDS=180 bash /vagrant/vagrant/provision/smoke.sh
result smoke $?
step done
`

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

func readResults(t *testing.T, file string) map[string]string {
	m := map[string]string{}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("the guest's results: %v", err)
		return m
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// childrenCPU is the user and system CPU time of this process's finished children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func linkOrCopy(src, dst string) error {
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

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lineLogger is a writer that logs each line through t.Log (streamed with -v).
func lineLogger(t *testing.T, prefix string) io.Writer {
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
