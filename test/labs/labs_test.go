package labs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/labtest"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/internal/vmtest"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
)

// The guides of docs/labs are run as written: every fenced ```sh block, in order, in one
// bash, and the output of each block is held against the `<!-- expect: REGEX -->` lines that
// follow it in the guide (each must match somewhere in that block's output). Three things
// differ from a reader's terminal, each said here and nowhere hidden:
//   - `make build` lines are left out: the binaries and images are already built (testenv.RequireBuilt);
//   - `LAB=lab` becomes a unique lab name, so runs never collide;
//   - `minilab up` also gets --images-dir $MINIK8S_IMAGES, and MINIK8S_BIN leads PATH.

func TestLabPodAnatomy(t *testing.T) { runGuide(t, "pod-anatomy.md", "lab-anat") }

func TestLabClusterIPWalk(t *testing.T) { runGuide(t, "clusterip-walk.md", "lab-walk") }

func TestLabNodeFailure(t *testing.T) { runGuide(t, "node-failure.md", "lab-fail") }

func TestLabHostGWvsVXLAN(t *testing.T) { runGuide(t, "hostgw-vs-vxlan.md", "lab-gw") }

func TestLabRollingUpdate(t *testing.T) { runGuide(t, "rolling-update.md", "lab-roll") }

func TestLabStaticPods(t *testing.T) { runGuide(t, "static-pods.md", "lab-static") }

func TestLabNetworkFaults(t *testing.T) { runGuide(t, "network-faults.md", "lab-faults") }

func TestLabEgress(t *testing.T) { runGuide(t, "egress.md", "lab-egress") }

func TestLabNetworkPolicy(t *testing.T) { runGuide(t, "network-policy.md", "lab-netpol") }

func TestLabNodePressure(t *testing.T) { runGuide(t, "node-pressure.md", "lab-press") }

func TestLabHAControlPlane(t *testing.T) { runGuide(t, "ha-control-plane.md", "lab-ha") }

// TestLabClusterIPWalkIPVS runs clusterip-walk-ipvs.md on a real minilab in IPVS mode
// (`minilab up --proxy-mode ipvs`) inside a qemu VM: this host's kernel has no IP_VS, so the
// VM boots Debian's kernel with a Debian root and systemd (vmtest.LabRoot: containerd, runc,
// iptables, ipset, ipvsadm...; cached, the systemd test's image). This test binary runs
// itself again in the VM, in the repository shared read-only as /repo (the binaries and
// images shared over its bin and images/out, where the guide runner looks by default).
func TestLabClusterIPWalkIPVS(t *testing.T) {
	const guide = "clusterip-walk-ipvs.md"
	if vmtest.InVM() {
		testenv.RequireTools(t, "ipvsadm", "ipset", "iptables")
		runMinilabGuide(t, guide, "lab-ipvs", 20*time.Minute) // emulated CPUs: slow, slower under load
		return
	}
	e := testenv.RequireBuilt(t)
	testenv.RequireTools(t, vmtest.QEMU, "debootstrap", "mkfs.ext4", "chroot")
	testenv.RequireFile(t, "/bin/busybox", "Debian package busybox-static")
	k, err := vmtest.FindKernel()
	if err != nil {
		testenv.Missing(t, "kernel for the VM: %v", err)
	}
	image, err := vmtest.LabRoot(context.Background(), k, vmtest.LineLogger(t, ""))
	if err != nil {
		t.Fatalf("root image: %v", err)
	}
	// /vmtest: this test binary and kubectl (the root has none).
	stage := t.TempDir()
	kubectl, _ := exec.LookPath("kubectl")
	for src, name := range map[string]string{os.Args[0]: "labs.test", kubectl: "kubectl"} {
		if err := vmtest.LinkOrCopy(src, filepath.Join(stage, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The shares are mounted over these directories of the read-only /repo: they must exist.
	repo, _ := filepath.Abs(filepath.Join("..", ".."))
	for _, d := range []string{"bin", "images/out"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := "MINIK8S_IN_VM=1 HOME=/root PATH=/repo/bin:/vmtest:/usr/sbin:/usr/bin:/sbin:/bin"
	if testenv.UnderMakeTest() {
		env += " MINIK8S_MAKE_TEST=1" // a missing tool fails inside too
	}
	vm := &vmtest.SystemdVM{Kernel: k, Image: image, Hostname: "ipvs",
		Shares: map[string]vmtest.Share{
			"/repo": {HostDir: repo}, "/repo/bin": {HostDir: e.BinDir}, "/repo/images/out": {HostDir: e.ImagesDir},
			"/vmtest": {HostDir: stage},
		},
		Command: fmt.Sprintf("cd /repo/test/labs && %s /vmtest/labs.test -test.run '^%s$' -test.v -test.timeout 22m",
			env, t.Name()),
		MemoryMB: 2048, CPUs: 2, Timeout: 25 * time.Minute,
	}
	var console strings.Builder
	start := time.Now()
	status, err := vm.Run(context.Background(), io.MultiWriter(&console, vmtest.LineLogger(t, "vm: ")))
	t.Logf("VM (kernel %s, image %s): %v", k.Version, filepath.Base(image), time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("VM: %v (exit status %d)", err, status)
	}
	if status != 0 || !strings.Contains(console.String(), "--- PASS: "+t.Name()) {
		t.Fatalf("the test failed inside the VM (exit status %d)", status)
	}
}

// guideStep is one ```sh block of a guide and what the guide says it prints.
type guideStep struct {
	line    int // the block's first line in the guide, for messages
	script  string
	expects []*regexp.Regexp
}

var expectLine = regexp.MustCompile(`^<!-- expect: (.*) -->$`)

// parseGuide reads the ```sh blocks of a guide and the expect lines after each.
func parseGuide(path string) ([]guideStep, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var steps []guideStep
	var cur *guideStep
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && line == "```sh":
			steps = append(steps, guideStep{line: n})
			cur, in = &steps[len(steps)-1], true
		case in && line == "```":
			in = false
		case in:
			cur.script += line + "\n"
		case expectLine.MatchString(line):
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: expect line before any sh block", path, n)
			}
			re, err := regexp.Compile(expectLine.FindStringSubmatch(line)[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			cur.expects = append(cur.expects, re)
		}
	}
	if in {
		return nil, fmt.Errorf("%s: unterminated sh block", path)
	}
	return steps, sc.Err()
}

// adapt makes the three changes to a guide's script said at the top of this file.
func adapt(script, name, imagesDir string) string {
	var out []string
	for _, line := range strings.Split(script, "\n") {
		switch {
		case strings.HasPrefix(line, "make build"):
			continue
		case line == "LAB=lab":
			line = "LAB=" + name
		case strings.HasPrefix(line, "minilab up "):
			line = strings.Replace(line, "minilab up ", "minilab up --images-dir "+imagesDir+" ", 1)
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

const stepMark = "=== guide step "

func runGuide(t *testing.T, guide, prefix string) {
	testenv.RequireTools(t, "ctr", "jq", "iptables", "conntrack", "busybox")
	runMinilabGuide(t, guide, prefix, 8*time.Minute)
}

// runMinilabGuide runs a guide of docs/labs on a lab named after prefix, within timeout,
// and takes the lab down at the end whatever happened.
func runMinilabGuide(t *testing.T, guide, prefix string, timeout time.Duration) {
	e := testenv.RequireBuilt(t)
	steps := loadGuide(t, filepath.Join("..", "..", "docs", "labs", guide))
	name := testenv.UniqueName(prefix)
	t.Cleanup(func() {
		if err := cluster.Down(context.Background(), name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Cleanup(func() { // the lab's daemons' logs when a step failed (the lab is gone if the last step ran)
		if l, err := lab.Load(name); err == nil && t.Failed() {
			labtest.DumpLogsOnFailure(t, l)
		}
	})
	env := append(os.Environ(), "PATH="+e.BinDir+":"+os.Getenv("PATH"))
	runSteps(t, guide, steps, name, e.ImagesDir, "", env, timeout)
}

// loadGuide reads a guide's steps and checks that each says what the reader will see.
func loadGuide(t *testing.T, path string) []guideStep {
	t.Helper()
	steps, err := parseGuide(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if len(s.expects) == 0 {
			t.Fatalf("%s:%d: a step without an expect line; say what the reader will see", path, s.line)
		}
	}
	if len(steps) < 3 {
		t.Fatalf("%s has %d sh blocks; a guide has at least set-up, one step and clean-up", path, len(steps))
	}
	return steps
}

// runSteps runs the steps in one bash in dir ("": ours) with env, within timeout, and holds
// each step's output against its expect lines.
func runSteps(t *testing.T, guide string, steps []guideStep, name, imagesDir, dir string, env []string, timeout time.Duration) {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, s := range steps {
		fmt.Fprintf(&script, "echo \"%s%d $SECONDS\"\n%s\n", stepMark, i, adapt(s.script, name, imagesDir))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, runErr := cmd.CombinedOutput()

	// Split the output at the step marks; a step that never started has no output.
	outputs := make([]string, len(steps))
	started := make([]int, len(steps)) // seconds into the script
	ran := -1
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if i, ok := strings.CutPrefix(strings.TrimSpace(line), stepMark); ok {
			var at int
			fmt.Sscan(i, &ran, &at)
			if ran >= 0 && ran < len(steps) {
				started[ran] = at
			}
			continue
		}
		if ran >= 0 {
			outputs[ran] += line
		}
	}
	for i, s := range steps {
		if i > ran {
			break
		}
		t.Logf("%s:%d (at %ds)\n$ %s%s", guide, s.line, started[i], strings.ReplaceAll(strings.TrimSpace(s.script), "\n", "\n$ "), "\n"+outputs[i])
	}
	if runErr != nil {
		failed := steps[max(ran, 0)]
		t.Fatalf("%s: the step at line %d failed: %v", guide, failed.line, runErr)
	}
	if ran != len(steps)-1 {
		t.Fatalf("%s: ran %d of %d steps", guide, ran+1, len(steps))
	}
	for i, s := range steps {
		for _, re := range s.expects {
			if !re.MatchString(outputs[i]) {
				t.Errorf("%s: the step at line %d does not show %q", guide, s.line, re)
			}
		}
	}
}

// TestLabGuideParsing: the guide reader itself, on guides written for it (no root needed).
func TestLabGuideParsing(t *testing.T) {
	write := func(text string) string {
		p := filepath.Join(t.TempDir(), "g.md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	steps, err := parseGuide(write("# g\n```sh\nLAB=lab\nminilab up --name $LAB\n```\n```text\nout\n```\n<!-- expect: is up -->\n<!-- expect: a+b -->\ntext\n```sh\nmake build\necho x\n```\n<!-- expect: x -->\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].line != 2 || len(steps[0].expects) != 2 || len(steps[1].expects) != 1 || steps[0].expects[1].String() != "a+b" {
		t.Fatalf("parsed %+v", steps)
	}
	if got, want := adapt(steps[0].script, "lab-x", "/img"), "LAB=lab-x\nminilab up --images-dir /img --name $LAB\n"; got != want {
		t.Errorf("adapt = %q, want %q", got, want)
	}
	if got := adapt(steps[1].script, "lab-x", "/img"); got != "echo x\n" {
		t.Errorf("adapt dropped the wrong lines: %q", got)
	}
	for text, want := range map[string]string{
		"<!-- expect: x -->\n":                 "expect line before any sh block",
		"```sh\necho\n":                        "unterminated sh block",
		"```sh\necho\n```\n<!-- expect: ( -->": "missing closing )",
	} {
		if _, err := parseGuide(write(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}
