package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/runtime"
)

const staticManifest = `apiVersion: v1
kind: Pod
metadata: {name: static-web, labels: {app: static}}
spec:
  containers: [{name: app, image: localhost/minik8s/busybox:v1, command: [sleep, "%s"]}]
`

// TestStaticPodsAndRestarts: a manifest in a node's directory runs as a static pod with a
// mirror pod in the API (re-created when deleted); it keeps running while miniapi is
// down and an edit made meanwhile starts the new version; a crashed minilet and a
// restarted containerd leave every container as it was; removing the file removes the pod.
func TestStaticPodsAndRestarts(t *testing.T) {
	l := upLab(t, "e2e-static", 1)
	ctx := context.Background()
	node := l.Nodes[0]
	manifestPath := filepath.Join(node.ManifestDir, "web.yaml")
	mustKubectl(t, l, "run", "api-pod", "--image=localhost/minik8s/busybox:v1", "--command", "--", "sleep", "3600")
	if err := os.WriteFile(manifestPath, []byte(fmt.Sprintf(staticManifest, "3600")), 0o644); err != nil {
		t.Fatal(err)
	}
	mirrorName := "static-web-" + node.Name
	mirror := func() (corev1.Pod, bool) {
		var p corev1.Pod
		out, err := cluster.Kubectl(ctx, l, "get", "pod", mirrorName, "-o", "json")
		return p, err == nil && json.Unmarshal([]byte(out), &p) == nil
	}
	waitFor(t, "the mirror pod Running", 60*time.Second, func() (bool, string) {
		p, ok := mirror()
		return ok && p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	p, _ := mirror()
	if p.Annotations["kubernetes.io/config.mirror"] == "" || p.Annotations["kubernetes.io/config.source"] != "file" ||
		len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Node" || p.OwnerReferences[0].Name != node.Name {
		t.Errorf("mirror pod metadata: annotations %v owners %v", p.Annotations, p.OwnerReferences)
	}

	mustKubectl(t, l, "delete", "pod", mirrorName, "--wait=false")
	waitFor(t, "the deleted mirror pod back", 60*time.Second, func() (bool, string) {
		q, ok := mirror()
		return ok && q.UID != p.UID && q.DeletionTimestamp == nil, string(q.UID)
	})
	// It shows the static pod's status at once (the kubelet syncs a static pod when its
	// mirror appears), not at the next housekeeping pass or change.
	shown := time.Now().Add(3 * time.Second)
	for q, _ := mirror(); q.Status.Phase != corev1.PodRunning || len(q.Status.ContainerStatuses) != 1 || q.Status.PodIP != p.Status.PodIP; q, _ = mirror() {
		if time.Now().After(shown) {
			t.Errorf("the re-created mirror pod has status %+v, want the running static pod's", q.Status)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	rt, err := runtime.New(ctx, cluster.ContainerdSocket(l), cluster.ContainerdNamespace(node))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	running := func() []string {
		cs, err := rt.ListContainers(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			if c.State == runtime.StateRunning {
				ids = append(ids, c.ID)
			}
		}
		slices.Sort(ids)
		return ids
	}
	waitFor(t, "api-pod Running", 60*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "pod", "api-pod", "-o", "jsonpath={.status.phase}")
		return out == "Running", out
	})
	before := running()
	if len(before) != 4 { // two pods: sandbox + app each
		t.Fatalf("running containers %v, want 4", before)
	}

	// A crashed minilet, and a restarted containerd, change nothing: the static pod keeps
	// its containers and address, and nothing is killed.
	for _, process := range []string{"minilet-" + node.Name, "containerd"} {
		if _, err := l.Restart(process, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second) // a relist and a housekeeping pass
		waitFor(t, "the node Ready after restarting "+process, 60*time.Second, func() (bool, string) {
			out, _ := cluster.Kubectl(ctx, l, "get", "node", node.Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return out == "True", out
		})
		if after := running(); !slices.Equal(after, before) {
			t.Errorf("after restarting %s the running containers are %v, were %v", process, after, before)
		}
		if q, _ := mirror(); q.Status.PodIP != p.Status.PodIP {
			t.Errorf("after restarting %s the static pod's address is %q, was %q", process, q.Status.PodIP, p.Status.PodIP)
		}
		if killed := mustKubectl(t, l, "get", "events", "--field-selector", "reason=Killing,involvedObject.name="+mirrorName, "-o", "name"); killed != "" {
			t.Errorf("after restarting %s: Killing events for the static pod: %s", process, killed)
		}
	}

	// A node outage: minilet is down while the static pod's containers die. Back, it starts
	// the pod over, and its container reports the run that ended as its lastState.
	minilet := "minilet-" + node.Name
	var miniletRun lab.Process
	for _, r := range l.Processes {
		if r.Name == minilet {
			miniletRun = lab.Process{Name: r.Name, NetNS: r.NetNS, Args: r.Args}
		}
	}
	if err := l.Stop(minilet, 0); err != nil {
		t.Fatal(err)
	}
	q, _ := mirror()
	if len(q.Status.ContainerStatuses) != 1 {
		t.Fatalf("static pod status before the outage: %+v", q.Status)
	}
	staticUID := q.Annotations["kubernetes.io/config.mirror"]
	died, err := rt.ListContainers(ctx, staticUID)
	if err != nil || len(died) != 2 {
		t.Fatalf("containers of the static pod: %v %v, want its sandbox and app", died, err)
	}
	for _, c := range died {
		if err := rt.StopContainer(ctx, c.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	oldID := q.Status.ContainerStatuses[0].ContainerID
	if _, err := l.Start(miniletRun); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the static pod running again after the outage", 60*time.Second, func() (bool, string) {
		q, _ := mirror()
		if len(q.Status.ContainerStatuses) != 1 {
			return false, fmt.Sprint(q.Status)
		}
		cs := q.Status.ContainerStatuses[0]
		return cs.State.Running != nil && cs.ContainerID != oldID, fmt.Sprintf("%+v", cs)
	})
	q, _ = mirror()
	if last := q.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ContainerID != oldID || last.ExitCode != 137 {
		t.Errorf("lastState after the outage: %+v, want the killed run of %s (exit 137)", q.Status.ContainerStatuses[0].LastTerminationState, oldID)
	}
	before = running()

	// miniapi down: the static pod keeps running, and an edit starts its new version.
	var apiArgs []string
	for _, r := range l.Processes {
		if r.Name == "miniapi" {
			apiArgs = r.Args
		}
	}
	if err := l.Stop("miniapi", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifestPath, []byte(fmt.Sprintf(staticManifest, "7200")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the edited static pod running without miniapi", 60*time.Second, func() (bool, string) {
		now := running()
		return len(now) == 4 && !slices.Equal(now, before), strings.Join(now, " ")
	})
	if _, err := l.Start(lab.Process{Name: "miniapi", NetNS: l.ControlPlane.NetNS, Args: apiArgs}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mirror of the edited pod", 90*time.Second, func() (bool, string) {
		q, ok := mirror()
		return ok && q.Status.Phase == corev1.PodRunning && len(q.Spec.Containers) == 1 && slices.Contains(q.Spec.Containers[0].Command, "7200"), fmt.Sprint(q.Spec.Containers)
	})

	if err := os.Remove(manifestPath); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the static pod and its mirror gone", 60*time.Second, func() (bool, string) {
		_, ok := mirror()
		return !ok && len(running()) == 2, fmt.Sprint(running())
	})
}
