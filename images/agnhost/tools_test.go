package main

import (
	"crypto/tls"
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
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/syncbuf"
)

func buildAgnhost(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agnhost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveOnFreePorts starts command on n distinct loopback ports that were free and waits until
// ready says it serves them. A port is free only when picked: another test may bind it before
// the server does, and the server then exits, so an early exit picks new ports (three tries).
func serveOnFreePorts(t *testing.T, n int, command func(ports []string) *exec.Cmd, ready func(ports []string) bool) []string {
	t.Helper()
	for try := 1; ; try++ {
		ports := make([]string, n)
		listeners := make([]net.Listener, n)
		for i := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			listeners[i], ports[i] = l, fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
		}
		for _, l := range listeners {
			l.Close()
		}
		cmd := command(ports)
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		if serving(ready, ports, exited) {
			return ports
		}
		select {
		case <-exited:
			if try == 3 {
				t.Fatalf("%s exited before serving, three times; last: %s", cmd.Path, stderr.String())
			}
			t.Logf("%s exited before serving on %v, picking new ports: %s", cmd.Path, ports, stderr.String())
		default:
			t.Fatalf("%s does not serve on %v after 20s: %s", cmd.Path, ports, stderr.String())
		}
	}
}

// serving polls ready for up to 20s; false when the server exits or the time runs out.
func serving(ready func(ports []string) bool, ports []string, exited <-chan struct{}) bool {
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			return false
		default:
		}
		if ready(ports) {
			return true
		}
	}
	return false
}

// TestEntrypointTesterAndLogsGenerator: the lines the Containers and kubectl logs tests
// match.
func TestEntrypointTesterAndLogsGenerator(t *testing.T) {
	bin := buildAgnhost(t)
	out, err := exec.Command(bin, "entrypoint-tester", "override", "--arguments").Output()
	if want := "[" + bin + " entrypoint-tester override --arguments]\n"; err != nil || string(out) != want {
		t.Errorf("entrypoint-tester printed %q, %v; want %q", out, err, want)
	}
	out, err = exec.Command(bin, "logs-generator", "--log-lines-total", "5", "--run-duration", "50ms").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	line := regexp.MustCompile(`^I\d{4} [\d:.]+ +\d+ tools\.go:\d+\] \d (GET|POST|PUT) /api/v1/namespaces/[a-z-]+/pods/\w+ \d{3}$`)
	if err != nil || len(lines) != 5 || !line.MatchString(lines[4]) || !strings.Contains(lines[4], "] 4 ") {
		t.Errorf("logs-generator: %v\n%s", err, out)
	}
	if err := exec.Command(bin, "logs-generator").Run(); err == nil {
		t.Error("logs-generator without --log-lines-total succeeded")
	}
}

func TestResolvConfField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(path, []byte("nameserver 1.1.1.1\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n"), 0o644)
	if got, err := resolvConfField(path, "search"); err != nil || strings.Join(got, ",") != "ns.svc.cluster.local,svc.cluster.local" {
		t.Errorf("search = %v, %v", got, err)
	}
	if got, err := resolvConfField(path, "nameserver"); err != nil || strings.Join(got, ",") != "1.1.1.1" {
		t.Errorf("nameserver = %v, %v", got, err)
	}
	if _, err := resolvConfField(path, "domain"); err == nil {
		t.Error("a missing key was found")
	}
}

// TestPorterTLS: SERVE_TLS_PORT_N is served over HTTPS with CERT_FILE and KEY_FILE.
func TestPorterTLS(t *testing.T) {
	bin, dir := buildAgnhost(t), t.TempDir()
	gen := exec.Command("go", "run", filepath.Join(runtime.GOROOT(), "src/crypto/tls/generate_cert.go"), "--host", "127.0.0.1")
	gen.Dir = dir
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generate_cert: %v\n%s", err, out)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var body []byte
	serveOnFreePorts(t, 1, func(ports []string) *exec.Cmd {
		porter := exec.Command(bin, "porter")
		porter.Env = append(os.Environ(), "SERVE_TLS_PORT_"+ports[0]+"=tls-ok", "CERT_FILE="+filepath.Join(dir, "cert.pem"), "KEY_FILE="+filepath.Join(dir, "key.pem"))
		return porter
	}, func(ports []string) bool {
		resp, err := client.Get("https://127.0.0.1:" + ports[0] + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return true
	})
	if string(body) != "tls-ok" {
		t.Errorf("porter over TLS answered %q, want tls-ok", body)
	}
}
