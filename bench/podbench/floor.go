package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/minik8s/minik8s/bench/internal/proc"
	"github.com/minik8s/minik8s/pkg/lab"
)

// The floors of minilet's memory: what a bare client-go process pays for the API work any
// node agent does at 0 pods, a LIST and WATCH of its node's pods and of its Node, through
// client-go's clientset (./listwatch) and through a REST client of core/v1 alone
// (./corewatch, no scheme of every API group). minilet's RSS above the first is minilet's
// own: the runtime client, the pod network, stats, the node API, its managers and the code
// they link in; the second shows what a client of only the kinds it reads would save.

// buildFloor builds the floor program name (listwatch or corewatch) into dir (a binary of
// its own, so its RSS holds only client-go's pages, not podbench's).
func buildFloor(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/minik8s/minik8s/bench/podbench/"+name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the floor (go build ./bench/podbench/%s): %w: %s", name, err, out)
	}
	return bin, nil
}

// floorRSS runs the floor against l's first node and returns its RSS, anonymous and
// file-backed, settle after its caches synced (as long as minilet is given).
func floorRSS(bin string, l *lab.Lab, settle time.Duration) (rss, anon, file float64, err error) {
	cmd := exec.Command(bin, "-kubeconfig", l.HostKubeconfig, "-node", l.Nodes[0].Name)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	synced := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		synced <- sc.Scan() && sc.Text() == "synced"
	}()
	select {
	case ok := <-synced:
		if !ok {
			return 0, 0, 0, fmt.Errorf("the floor (%s) ended before its caches synced", filepath.Base(bin))
		}
	case <-time.After(time.Minute):
		return 0, 0, 0, fmt.Errorf("the floor's (%s's) caches not synced after a minute", filepath.Base(bin))
	}
	time.Sleep(settle)
	if rss, err = proc.RSSMiB(cmd.Process.Pid); err != nil {
		return 0, 0, 0, err
	}
	anon, file, err = proc.RSSParts(cmd.Process.Pid)
	return rss, anon, file, err
}
