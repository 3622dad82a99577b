package podsync

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"

	"github.com/minik8s/minik8s/pkg/crilog"
	"github.com/minik8s/minik8s/pkg/runtime"
)

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	msgFile, logFile := filepath.Join(dir, "0"), filepath.Join(dir, "0.log")
	w, err := crilog.Open(logFile, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		w.Write(crilog.Entry{Time: time.Now(), Stream: crilog.Stderr, Content: fmt.Appendf(nil, "log line %03d", i)})
	}
	w.Close()
	os.WriteFile(msgFile, nil, 0o666)
	fallback := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}
	readFile := &corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	failed := runtime.Container{ExitCode: 1, LogPath: logFile, TerminationLog: msgFile}

	if got := terminationMessage(readFile, failed, nil); got != "" {
		t.Errorf("ReadFile with an empty file: %q, want nothing", got)
	}
	got := terminationMessage(fallback, failed, nil)
	if len(got) > fallbackLogBytes || !strings.HasSuffix(got, "log line 099\n") || strings.Contains(got, "log line 019\n") {
		t.Errorf("FallbackToLogsOnError: %d bytes ending %q, want at most %d bytes of the last 80 lines", len(got), got[max(0, len(got)-20):], fallbackLogBytes)
	}
	if got := terminationMessage(fallback, runtime.Container{LogPath: logFile, TerminationLog: msgFile}, nil); got != "" {
		t.Errorf("FallbackToLogsOnError after success: %q, want nothing", got)
	}
	os.WriteFile(msgFile, []byte(strings.Repeat("m", maxTerminationMessage+10)), 0o666)
	if got := terminationMessage(fallback, failed, nil); got != strings.Repeat("m", maxTerminationMessage) {
		t.Errorf("message file: %d bytes, want the first %d", len(got), maxTerminationMessage)
	}
}

// TestDeletedPodReportsHowItEnded: a deleted pod's containers stop, then its status says
// so (terminated containers, phase Failed for the SIGTERM exit), before the pod is deleted
// for good, as the kubelet does: a pod a finalizer holds (a Job's) must not stay Running.
func TestDeletedPodReportsHowItEnded(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("job-pod", corev1.RestartPolicyAlways, "work"))
	deleting := h.apiPod(pod)
	deleting.DeletionTimestamp = &metav1.Time{Time: h.Clock.Now()}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](0)
	h.Client.ClearActions()
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err != nil {
		t.Fatal(err)
	}
	var order []string
	var final *corev1.Pod
	for _, a := range h.Client.Actions() {
		switch {
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			order = append(order, "status")
			final = a.(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		case a.GetVerb() == "delete":
			order = append(order, "delete")
		}
	}
	if !slices.Equal(order, []string{"status", "delete"}) {
		t.Fatalf("API writes %v, want the status, then the delete", order)
	}
	cs := final.Status.ContainerStatuses
	if final.Status.Phase != corev1.PodFailed || len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 143 {
		t.Errorf("final status: phase %s, containers %+v; want Failed with work terminated (143)", final.Status.Phase, cs)
	}
}

// TestGonePodStopsWithTheShortestGrace: a pod gone from the API before its containers
// stopped was deleted with grace period 0 (kubectl delete --force: the API server cuts it
// to 0 before it removes the pod), so its containers get the kubelet's 2 s floor, not the
// grace period of the version last seen; a static pod whose file went keeps its own
// terminationGracePeriodSeconds, as the kubelet's REMOVE of a file pod.
func TestGonePodStopsWithTheShortestGrace(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](60)
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, true); err != nil {
		t.Fatal(err)
	}
	if g := h.Runtime.StopGrace["app"]; g != minGracePeriod {
		t.Errorf("SIGTERM grace %s for a pod gone from the API, want %s", g, minGracePeriod)
	}

	static := agenttest.Pod("etcd", corev1.RestartPolicyAlways, "member")
	static.Annotations = map[string]string{staticpod.AnnotationSource: "file"}
	static.Spec.TerminationGracePeriodSeconds = ptr.To[int64](45)
	static, st = h.start(static)
	if err := h.syncer.TerminatePod(h.ctx, st, static, true); err != nil {
		t.Fatal(err)
	}
	if g := h.Runtime.StopGrace["member"]; g != 45*time.Second {
		t.Errorf("SIGTERM grace %s for a static pod whose file went, want its 45 s", g)
	}
}
