// Package systemd_test checks the units of systemd/ and `make install`: the paths install
// writes and uninstall removes, the units as systemd itself parses them, the flags of the
// example configuration against the real daemons, and READY=1 from a real miniapi.
package systemd_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	"github.com/vishvananda/netns"
)

var (
	daemons  = []string{"miniapi", "minilet", "miniproxy", "etcd", "apilb"}
	commands = []string{"miniapi", "minilet", "miniproxy", "minilab", "etcd", "etcdctl"}
)

// command is what a daemon's unit runs: the binary of its name, but for apilb, which is
// miniproxy's subcommand.
func command(d string) []string {
	if d == "apilb" {
		return []string{"miniproxy", "apilb"}
	}
	return []string{d}
}

// binDir is where the built daemons are: MINIK8S_BIN under make test, else ../bin.
func binDir(t *testing.T) string {
	dir := os.Getenv("MINIK8S_BIN")
	if dir == "" {
		dir = "../bin"
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range daemons {
		c := command(d)[0]
		testenv.RequireFile(t, filepath.Join(abs, c), c+" binary (make build)")
	}
	return abs
}

// stubBin makes a bin/ of small executables: install copies files, whatever they are.
func stubBin(t *testing.T) string {
	dir := t.TempDir()
	for _, c := range commands {
		if err := os.WriteFile(filepath.Join(dir, c), []byte("#!/bin/sh\necho "+c+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runMake(t *testing.T, args ...string) (string, error) {
	t.Helper()
	testenv.RequireTools(t, "make", "install", "sed", "cmp")
	out, err := exec.Command("make", append([]string{"-s", "-C", ".."}, args...)...).CombinedOutput()
	return string(out), err
}

func mustMake(t *testing.T, args ...string) {
	t.Helper()
	if out, err := runMake(t, args...); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

func TestInstallUninstall(t *testing.T) {
	bin, dest := stubBin(t), t.TempDir()
	vars := []string{"DESTDIR=" + dest, "PREFIX=/usr/local", "BIN=" + bin}
	mustMake(t, append([]string{"install"}, vars...)...)

	for _, c := range commands {
		path := filepath.Join(dest, "usr/local/bin", c)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("binary not installed: %v", err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s has mode %v, want 0755", path, st.Mode().Perm())
		}
		if got, _ := os.ReadFile(path); !bytes.Contains(got, []byte("echo "+c)) {
			t.Errorf("%s is not bin/%s: %q", path, c, got)
		}
	}
	if !exists(filepath.Join(dest, "usr/local/lib/modules-load.d/minik8s.conf")) {
		t.Error("modules-load.d/minik8s.conf not installed")
	}
	if link, err := os.ReadFile(filepath.Join(dest, "usr/local/lib/systemd/network/80-minik8s.link")); err != nil ||
		!bytes.Contains(link, []byte("MACAddressPolicy=none")) || !bytes.Contains(link, []byte("OriginalName=veth* cni0 minik8s.*")) {
		t.Errorf("systemd/network/80-minik8s.link not installed as shipped: %q %v", link, err)
	}
	for _, d := range daemons {
		unitText, err := os.ReadFile(filepath.Join(dest, "usr/local/lib/systemd/system", d+".service"))
		if err != nil {
			t.Fatalf("unit not installed: %v", err)
		}
		wantExec := fmt.Sprintf("ExecStart=/usr/local/bin/%s $%s_ARGS\n", strings.Join(command(d), " "), strings.ToUpper(d))
		wantEnv := fmt.Sprintf("EnvironmentFile=/etc/minik8s/%s.env\n", d)
		for _, want := range []string{wantExec, wantEnv} {
			if !strings.Contains(string(unitText), want) {
				t.Errorf("%s.service lacks %q", d, want)
			}
		}
		env, err := os.ReadFile(filepath.Join(dest, "etc/minik8s", d+".env"))
		if err != nil {
			t.Fatalf("configuration not installed: %v", err)
		}
		if strings.Contains(string(unitText)+string(env), "@") {
			t.Errorf("%s: a @PLACEHOLDER@ was left unsubstituted", d)
		}
	}

	// An operator's configuration survives a second install and an uninstall.
	edited := filepath.Join(dest, "etc/minik8s/minilet.env")
	if err := os.WriteFile(edited, []byte("MINILET_ARGS=\"--node-ip=10.0.0.5\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustMake(t, append([]string{"install"}, vars...)...)
	if got, _ := os.ReadFile(edited); !strings.Contains(string(got), "10.0.0.5") {
		t.Fatalf("install overwrote the edited %s: %q", edited, got)
	}

	mustMake(t, append([]string{"uninstall"}, vars...)...)
	var left []string
	_ = filepath.Walk(dest, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			left = append(left, strings.TrimPrefix(path, dest))
		}
		return nil
	})
	if want := []string{"/etc/minik8s/minilet.env"}; strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("after uninstall these files are left: %v, want only the edited configuration %v", left, want)
	}
}

func TestInstallWithoutBuildFails(t *testing.T) {
	bin := stubBin(t)
	if err := os.Remove(filepath.Join(bin, "minilet")); err != nil {
		t.Fatal(err)
	}
	out, err := runMake(t, "install", "DESTDIR="+t.TempDir(), "BIN="+bin)
	if err == nil || !strings.Contains(out, "minilet: run make build first") {
		t.Fatalf("install without bin/minilet: err %v, output %q; want a failure naming the missing binary", err, out)
	}
}

// TestUnitsVerify has systemd itself load the installed units (systemd-analyze verify checks
// every directive, its value and the ExecStart binary) and checks what each must say.
func TestUnitsVerify(t *testing.T) {
	testenv.RequireTools(t, "systemd-analyze")
	prefix := t.TempDir()
	mustMake(t, "install", "PREFIX="+prefix, "CONFDIR="+filepath.Join(prefix, "etc"), "BIN="+stubBin(t))
	unitDir := filepath.Join(prefix, "lib/systemd/system")
	var units []string
	for _, d := range daemons {
		units = append(units, filepath.Join(unitDir, d+".service"))
	}
	out, err := exec.Command("systemd-analyze", append([]string{"verify"}, units...)...).CombinedOutput()
	// verify only warns about an unknown directive or a bad value: any output fails.
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	common := map[string]string{"Service/Type": "notify", "Service/Restart": "always", "Service/LimitNOFILE": "1048576",
		"Install/WantedBy": "multi-user.target"}
	want := map[string]map[string]string{
		"minilet": {"Service/Delegate": "yes", "Service/KillMode": "process", "Unit/Wants": "containerd.service"},
		"apilb":   {"Unit/Before": "minilet.service"},
	}
	for _, d := range daemons {
		f, err := os.Open(filepath.Join(unitDir, d+".service"))
		if err != nil {
			t.Fatal(err)
		}
		opts, err := unit.Deserialize(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.service: %v", d, err)
		}
		got := map[string][]string{}
		for _, o := range opts {
			key := o.Section + "/" + o.Name
			got[key] = append(got[key], strings.Fields(o.Value)...)
		}
		check := func(key, value string) {
			for _, v := range got[key] {
				if v == value {
					return
				}
			}
			t.Errorf("%s.service: %s is %q, want %q among its values", d, key, got[key], value)
		}
		for k, v := range common {
			check(k, v)
		}
		for k, v := range want[d] {
			check(k, v)
		}
		switch d {
		case "minilet":
			check("Unit/After", "containerd.service")
		case "apilb":
			check("Unit/Before", "miniproxy.service")
		}
	}
}

// TestEnvFlagsExist checks every flag of the example configuration against the daemon's own
// --help: a flag it does not know would stop the unit at every start.
func TestEnvFlagsExist(t *testing.T) {
	bin := binDir(t)
	flagRe := regexp.MustCompile(`--([a-z0-9-]+)=`)
	for _, d := range daemons {
		env, err := os.ReadFile(filepath.Join(d + ".env"))
		if err != nil {
			t.Fatal(err)
		}
		var args string
		for _, line := range strings.Split(string(env), "\n") {
			if v, ok := strings.CutPrefix(line, strings.ToUpper(d)+"_ARGS="); ok {
				args = v
			}
		}
		flags := flagRe.FindAllStringSubmatch(args, -1)
		if len(flags) == 0 {
			t.Fatalf("%s.env: no %s_ARGS with flags", d, strings.ToUpper(d))
		}
		c := command(d)
		help, err := exec.Command(filepath.Join(bin, c[0]), append(c[1:], "--help")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", d, err, help)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(f[1]) + `\b`).Match(help) {
				t.Errorf("%s.env passes --%s, which %s --help does not list", d, f[1], d)
			}
		}
	}
}

// TestMiniapiNotifiesReady starts the real miniapi as systemd would start a Type=notify unit
// (NOTIFY_SOCKET naming a datagram socket this test reads) and checks that when READY=1
// arrives the API already answers /healthz.
func TestMiniapiNotifiesReady(t *testing.T) {
	bin := binDir(t)
	port := freeport.For(t)
	d := startNotifying(t, "", filepath.Join(bin, "miniapi"), "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port))
	d.awaitReady(t)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
	if err != nil {
		t.Fatalf("READY=1 came, but /healthz does not answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("READY=1 came, but /healthz answers %s", resp.Status)
	}
	d.noMore(t)
}

// TestMiniproxyNotifiesReady runs miniapi and miniproxy in a network namespace of the test's
// own (miniproxy writes its iptables rules there) and checks that when miniproxy's READY=1
// arrives its /livez says healthy: the first sync is done. /healthz, which as kube-proxy's
// also asks whether the node is eligible for load balancers' traffic, says no: this
// cluster has no Node node-1.
func TestMiniproxyNotifiesReady(t *testing.T) {
	bin := binDir(t)
	testenv.RequireRoot(t, "runs miniproxy in a network namespace of its own")
	testenv.RequireTools(t, "ip", "iptables-restore")
	ns := fmt.Sprintf("minik8s-sdnotify-%d", os.Getpid())
	nettest.Named(t, ns)
	data := filepath.Join(t.TempDir(), "data")
	api := startNotifying(t, ns, filepath.Join(bin, "miniapi"), "--data-dir", data, "--bind-address", "127.0.0.1", "--secure-port", "6443")
	api.awaitReady(t)
	// Cleanup runs last-registered first: miniproxy stops before the namespace goes.
	proxy := startNotifying(t, ns, filepath.Join(bin, "miniproxy"), "--kubeconfig", filepath.Join(data, "admin.kubeconfig"),
		"--hostname-override", "node-1", "--healthz-bind-address", "127.0.0.1:10256", "--metrics-bind-address", "127.0.0.1:10249")
	proxy.awaitReady(t)
	out, err := getInNetns(ns, "127.0.0.1:10256", "/livez")
	if err != nil {
		t.Fatalf("READY=1 came, but miniproxy's /livez does not answer: %v", err)
	}
	if !strings.HasPrefix(out, "HTTP/1.0 200 ") || !strings.Contains(out, `"lastUpdated"`) {
		t.Errorf("READY=1 came, but miniproxy's /livez is not healthy:\n%s", out)
	}
	if out, err := getInNetns(ns, "127.0.0.1:10256", "/healthz"); err != nil || !strings.HasPrefix(out, "HTTP/1.0 503 ") || !strings.Contains(out, `"nodeEligible":false`) {
		t.Errorf("miniproxy's /healthz without its Node: %v\n%s", err, out)
	}
	proxy.noMore(t)
}

// getInNetns sends GET path to addr from inside network namespace ns and returns the whole
// response. Its goroutine's thread enters ns and ends with it, never running other goroutines.
func getInNetns(ns, addr, path string) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends in ns with this goroutine
		h, err := netns.GetFromName(ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			done <- result{err: err}
			return
		}
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second) // the socket is made in ns
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
			done <- result{err: err}
			return
		}
		out, err := io.ReadAll(conn)
		done <- result{string(out), err}
	}()
	r := <-done
	return r.out, r.err
}

// notifying is a daemon started with NOTIFY_SOCKET, and what it sent there.
type notifying struct {
	name   string
	msgs   chan string
	exited chan error
}

// startNotifying starts a daemon (in network namespace ns unless "") as systemd starts a
// Type=notify unit, and stops it with SIGTERM when the test ends.
func startNotifying(t *testing.T, ns, path string, args ...string) *notifying {
	t.Helper()
	sockPath := filepath.Join(t.TempDir(), "notify.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	if ns != "" {
		args = append([]string{"netns", "exec", ns, path}, args...)
		path = "ip"
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sockPath)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &notifying{name: filepath.Base(path), msgs: make(chan string, 4), exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait() }()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				return
			}
			d.msgs <- string(buf[:n])
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // ip netns exec execs the daemon: same process
		select {
		case <-d.exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-d.exited
		}
		sock.Close()
		if t.Failed() {
			t.Logf("%s's log:\n%s", args, logs.String())
		}
	})
	return d
}

func (d *notifying) awaitReady(t *testing.T) {
	t.Helper()
	select {
	case msg := <-d.msgs:
		if msg != "READY=1" {
			t.Fatalf("first notification %q, want READY=1", msg)
		}
	case err := <-d.exited:
		t.Fatalf("exited before READY=1: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("no READY=1 within 90s")
	}
}

// noMore checks READY=1 was the only notification.
func (d *notifying) noMore(t *testing.T) {
	select {
	case msg := <-d.msgs:
		t.Errorf("a second notification %q after READY=1", msg)
	case <-time.After(2 * time.Second):
	}
}

// TestApilbNotifiesReady starts a real miniapi and apilb.service's command in front of it
// and of an address where nothing listens, as apilb.env configures it (the cluster CA for
// the /readyz checks), and checks that when READY=1 arrives every connection through the
// balancer reaches miniapi, verified as 127.0.0.1 against the cluster CA: the dead backend
// was checked out before the first connection.
func TestApilbNotifiesReady(t *testing.T) {
	bin := binDir(t)
	data := filepath.Join(t.TempDir(), "data")
	ports, err := freeport.Loopback(3)
	if err != nil {
		t.Fatal(err)
	}
	apiPort, deadPort, lbPort := ports[0], ports[1], ports[2]
	api := startNotifying(t, "", filepath.Join(bin, "miniapi"), "--data-dir", data,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(apiPort))
	api.awaitReady(t)
	lb := startNotifying(t, "", filepath.Join(bin, "miniproxy"), "apilb", "--listen", fmt.Sprintf("127.0.0.1:%d", lbPort),
		fmt.Sprintf("--backend=127.0.0.1:%d,127.0.0.1:%d", deadPort, apiPort), "--ca-file", filepath.Join(data, "pki/ca.crt"))
	lb.awaitReady(t)
	ca, err := os.ReadFile(filepath.Join(data, "pki/ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	for i := range 4 { // every backend's turn twice
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", lbPort))
		if err != nil {
			t.Fatalf("GET /readyz #%d through the balancer: %v", i+1, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /readyz #%d through the balancer: %s", i+1, resp.Status)
		}
	}
	lb.noMore(t)
}
