package podsync

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/cm"
)

// TestResizeNonSidecarInitContainer: a running non-sidecar init container is resized in
// place as the 1.36 kubelet does with InPlacePodVerticalScalingInitContainers
// (computeInitContainerActions hands it to computePodResizeAction): the runtime gets its
// new resources without a restart, the pod cgroup the pod's new limits, its status the
// resources it runs with, and the resize its ResizeStarted and ResizeCompleted events.
func TestResizeNonSidecarInitContainer(t *testing.T) {
	h := newHarness(t)
	pod := withInit(agenttest.Pod("ir", corev1.RestartPolicyAlways, "c"), "init")
	pod.Spec.InitContainers[0].Command = []string{"sleep", "300"}
	pod.Spec.InitContainers[0].Resources = guaranteed("20m", "35Mi")
	pod.Spec.Containers[0].Resources = guaranteed("20m", "35Mi")
	pod, st := h.start(pod)
	h.Runtime.TakeCalls()
	h.TakeEvents()

	p := h.apiPod(pod)
	p.Spec.InitContainers[0].Resources = guaranteed("25m", "40Mi")
	p.Generation++
	if _, err := h.Client.CoreV1().Pods(p.Namespace).Update(h.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.sync(st, pod)
	h.wantCalls("of the resize", "resize init cpu=25/2500 memory=41943040")
	got := h.apiPod(pod)
	cs := initStatusOf(got, "init")
	if cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("init container after the resize: %+v, restarts %d", cs.State, cs.RestartCount)
	}
	if want := guaranteed("25m", "40Mi"); cs.Resources == nil || !equality.Semantic.DeepEqual(*cs.Resources, want) ||
		!equality.Semantic.DeepEqual(cs.AllocatedResources, want.Requests) {
		t.Errorf("init container status resources %+v, allocated %+v, want %+v", cs.Resources, cs.AllocatedResources, want)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d of generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	summary := fmt.Sprintf(`{"initContainers":[{"name":"init","resources":{"limits":{"cpu":"25m","memory":"40Mi"},"requests":{"cpu":"25m","memory":"40Mi"}}}],`+
		`"containers":[{"name":"c","resources":{"limits":{"cpu":"20m","memory":"35Mi"},"requests":{"cpu":"20m","memory":"35Mi"}}}],"generation":%d}`, got.Generation)
	if ev := h.TakeEvents(); len(ev) != 2 || ev[0] != "Normal ResizeStarted Pod resize started: "+summary || ev[1] != "Normal ResizeCompleted Pod resize completed: "+summary {
		t.Errorf("events of the resize %q, want ResizeStarted and ResizeCompleted with %s", ev, summary)
	}
	// The pod's limit is its init container's now, the larger.
	if limit := podMemoryLimit(t, cm.PodCgroup(h.syncer.cfg.CgroupRoot, pod)); limit != "41943040" {
		t.Errorf("pod cgroup memory limit %s after the resize, want 41943040", limit)
	}
	h.sync(st, pod)
	h.wantCalls("of a sync after the resize")
	h.exitAndSync(st, pod, "init", 0)
	h.wantCalls("after the init container succeeded", "create c", "start c")
}
