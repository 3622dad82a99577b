package staticpod

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const manifest = `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "3600"]}]
`

func TestParse(t *testing.T) {
	pod, err := Parse([]byte(manifest), "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-node-1" || pod.Namespace != "default" || pod.Spec.NodeName != "node-1" || !IsStatic(pod) ||
		pod.Annotations[AnnotationHash] != string(pod.UID) || pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("static pod %+v", pod.ObjectMeta)
	}
	again, _ := Parse([]byte(manifest), "node-1")
	edited, _ := Parse([]byte(strings.Replace(manifest, "3600", "7200", 1)), "node-1")
	other, _ := Parse([]byte(manifest), "node-2")
	if again.UID != pod.UID || edited.UID == pod.UID || other.UID == pod.UID {
		t.Errorf("UIDs: same file %s/%s, edited %s, other node %s", pod.UID, again.UID, edited.UID, other.UID)
	}
	json := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j","namespace":"kube-system"},"spec":{"containers":[{"name":"a","image":"i"}]}}`
	if p, err := Parse([]byte(json), "n"); err != nil || p.Name != "j-n" || p.Namespace != "kube-system" {
		t.Errorf("JSON manifest: %v, %v", p, err)
	}
	for name, bad := range map[string]string{
		"not yaml":      "{{{",
		"a deployment":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
		"no name":       "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, image: i}]}\n",
		"no containers": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"bad name":      "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: a, image: i}]}\n",
	} {
		if _, err := Parse([]byte(bad), "node-1"); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestSourceFollowsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var current []*corev1.Pod
	invalid := map[string]bool{}
	src := &Source{Dir: dir, Node: "node-1", Period: time.Hour, Log: slog.Default(), // only fsnotify can notice in time
		Update:  func(p []*corev1.Pod) { mu.Lock(); current = p; mu.Unlock() },
		Invalid: func(file string, _ error) { mu.Lock(); invalid[filepath.Base(file)] = true; mu.Unlock() },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go src.Run(ctx)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			done := ok()
			mu.Unlock()
			if done {
				return
			}
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(dir, ".web.yaml.swp"), []byte("junk"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("{{{"), 0o644)
	waitFor("the pod", func() bool { return len(current) == 1 && current[0].Name == "web-node-1" })
	waitFor("the broken file reported", func() bool { return invalid["broken.yaml"] })
	if invalid[".web.yaml.swp"] {
		t.Error("a dotfile was read")
	}
	first := current[0].UID
	os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(strings.Replace(manifest, "3600", "60", 1)), 0o644)
	waitFor("the edited pod", func() bool { return len(current) == 1 && current[0].UID != first })
	os.Remove(filepath.Join(dir, "web.yaml"))
	waitFor("no pods", func() bool { return len(current) == 0 })
}
