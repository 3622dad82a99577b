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
)

func buildAgnhost(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agnhost")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	porter := exec.Command(bin, "porter")
	porter.Env = append(os.Environ(), "SERVE_TLS_PORT_"+port+"=tls-ok", "CERT_FILE="+filepath.Join(dir, "cert.pem"), "KEY_FILE="+filepath.Join(dir, "key.pem"))
	if err := porter.Start(); err != nil {
		t.Fatal(err)
	}
	defer porter.Process.Kill()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var body []byte
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get("https://127.0.0.1:" + port + "/")
		if err != nil {
			continue
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		break
	}
	if string(body) != "tls-ok" {
		t.Errorf("porter over TLS answered %q, want tls-ok", body)
	}
}
