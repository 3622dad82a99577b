package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
