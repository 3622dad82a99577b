package podsync

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/agenttest"
	"github.com/minik8s/minik8s/pkg/agent/images"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/agent/status"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/runtime"
)

func TestNewPodRunsSandboxThenContainersInOrder(t *testing.T) {
	h := newHarness(t)
	pod, _ := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "first", "second"))
	h.wantCalls("of the first sync", "sandbox web", "pull localhost/minik8s/busybox:v1", "create first", "start first", "create second", "start second")
	if _, err := os.Stat(filepath.Join(h.syncer.cfg.NetNSDir, string(pod.UID))); err != nil {
		t.Errorf("pod netns: %v", err)
	}
	if h.Network.AttachedCount() != 1 {
		t.Errorf("%d sandboxes attached to the network, want 1", h.Network.AttachedCount())
	}
	logPath := h.Runtime.Named(string(pod.UID), "first")[0].LogPath
	if want := filepath.Join(h.syncer.cfg.RootDir, "logs", "default_web_uid-web", "first", "0.log"); logPath != want {
		t.Errorf("log path %s, want %s", logPath, want)
	}

	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", got.Status.Phase)
	}
	if got.Status.PodIP != "10.244.1.2" || got.Status.HostIP != "10.200.0.11" || got.Status.StartTime == nil {
		t.Errorf("podIP %q hostIP %q startTime %v", got.Status.PodIP, got.Status.HostIP, got.Status.StartTime)
	}
	for _, name := range []string{"first", "second"} {
		cs := agenttest.ContainerStatus(got, name)
		if cs.State.Running == nil || !cs.Ready || cs.ContainerID == "" || cs.RestartCount != 0 || cs.Started == nil || !*cs.Started {
			t.Errorf("status of %s: %+v", name, cs)
		}
	}
	for _, c := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady, corev1.PodInitialized, corev1.PodScheduled, corev1.PodReadyToStartContainers} {
		if s := conditionStatus(got, c); s != corev1.ConditionTrue {
			t.Errorf("condition %s is %q, want True", c, s)
		}
	}
	events := h.TakeEvents()
	for _, e := range []string{"Normal Pulling", "Normal Pulled", "Normal Created", "Normal Started"} {
		if !hasEvent(events, e) {
			t.Errorf("no %q event in %q", e, events)
		}
	}
}

func TestSandboxFailureIsReportedAndRetried(t *testing.T) {
	h := newHarness(t)
	pod, st := h.admit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.Network.SetUpErr = os.ErrPermission

	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync succeeded without a network")
	}
	if !hasEvent(h.TakeEvents(), "Warning FailedCreatePodSandBox") {
		t.Error("no FailedCreatePodSandBox event")
	}
	if left, _ := h.Runtime.ListContainers(h.ctx, ""); len(left) != 0 {
		t.Errorf("failed sandbox left containers behind: %+v", left)
	}
	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodPending || agenttest.ContainerStatus(got, "app").State.Waiting == nil ||
		agenttest.ContainerStatus(got, "app").State.Waiting.Reason != reasonContainerCreating {
		t.Errorf("status after a failed sandbox: %+v", got.Status)
	}

	h.Network.SetUpErr = nil
	h.sync(st, pod)
	if got := h.apiPod(pod); got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s after the retry, want Running", got.Status.Phase)
	}
}

func TestRestartPolicyAlwaysRestartsWithBackOff(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("crash", corev1.RestartPolicyAlways, "app"))
	uid := string(pod.UID)

	// The first exit restarts at once, as the kubelet does.
	h.Clock.Step(time.Second)
	h.Runtime.Exit(uid, "app", 1)
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.RestartCount != 1 || cs.State.Running == nil ||
		cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Fatalf("after the first exit: %+v", cs)
	}
	current := h.Runtime.Named(uid, "app")
	if !newestLogsTo(current, "1.log") {
		t.Errorf("restarted container logs to %v, want .../1.log", current)
	}

	// The second exit backs off 10 s.
	h.Clock.Step(time.Second)
	h.Runtime.Exit(uid, "app", 2)
	h.Clock.Step(time.Second)
	h.Runtime.TakeCalls()
	after := h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Fatalf("restarted during back-off: %q", calls)
	}
	if after <= 0 || after > backoffInitial {
		t.Errorf("requeue after %s, want within the 10s back-off", after)
	}
	got := h.apiPod(pod)
	cs := agenttest.ContainerStatus(got, "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff || cs.LastTerminationState.Terminated == nil ||
		cs.LastTerminationState.Terminated.ExitCode != 2 || cs.Ready {
		t.Errorf("status during back-off: %+v", cs)
	}
	if got.Status.Phase != corev1.PodRunning || conditionStatus(got, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("phase %s ready %s during back-off, want Running and not ready", got.Status.Phase, conditionStatus(got, corev1.PodReady))
	}
	if !hasEvent(h.TakeEvents(), "Warning BackOff") {
		t.Error("no BackOff event")
	}

	// After the back-off the container starts again.
	h.Clock.Step(backoffInitial)
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.RestartCount != 2 || cs.State.Running == nil {
		t.Fatalf("after the back-off: %+v", cs)
	}
	// Dead containers are collected: the current one and the one before it stay.
	if n := len(h.Runtime.Named(uid, "app")); n > 2 {
		t.Errorf("%d containers kept for app, want at most 2", n)
	}

	// The next back-off is twice as long.
	h.Clock.Step(time.Second)
	h.Runtime.Exit(uid, "app", 1)
	h.Clock.Step(backoffInitial + time.Second)
	h.Runtime.TakeCalls()
	h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("restarted 11s after the third exit, want a 20s back-off: %q", calls)
	}
}

// newestLogsTo says whether the newest of cs (in creation order) logs to a file called base.
func newestLogsTo(cs []runtime.Container, base string) bool {
	return len(cs) > 0 && filepath.Base(cs[len(cs)-1].LogPath) == base
}

func TestRestartPolicyNeverEndsThePod(t *testing.T) {
	for _, tc := range []struct {
		exit  int32
		phase corev1.PodPhase
	}{{0, corev1.PodSucceeded}, {1, corev1.PodFailed}} {
		t.Run(string(tc.phase), func(t *testing.T) {
			h := newHarness(t)
			job := agenttest.Pod("job", corev1.RestartPolicyNever, "app")
			job.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
			pod, st := h.start(job)
			uid := string(pod.UID)
			h.Clock.Step(time.Second)
			if err := os.WriteFile(h.Runtime.Named(uid, "app")[0].TerminationLog, []byte("goodbye"), 0o644); err != nil {
				t.Fatal(err)
			}
			h.Runtime.Exit(uid, "app", tc.exit)
			h.Runtime.TakeCalls()
			h.sync(st, pod)

			got := h.apiPod(pod)
			if got.Status.Phase != tc.phase {
				t.Fatalf("phase %s, want %s", got.Status.Phase, tc.phase)
			}
			cs := agenttest.ContainerStatus(got, "app")
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tc.exit || cs.RestartCount != 0 {
				t.Fatalf("container status %+v", cs)
			}
			// The status written once its sandbox and volumes are gone keeps what the
			// container wrote to its termination message file.
			if msg := cs.State.Terminated.Message; msg != "goodbye" {
				t.Errorf("termination message %q, want %q", msg, "goodbye")
			}
			// Its sandbox gone, it is no longer ready to start containers, as the kubelet
			// reports a pod it has terminated.
			if c := status.Condition(&got.Status, corev1.PodReadyToStartContainers); c == nil || c.Status != corev1.ConditionFalse {
				t.Errorf("PodReadyToStartContainers of the finished pod: %+v, want False", c)
			}
			// The finished pod's sandbox and network are released; its container stays for logs.
			h.wantCalls("runtime calls after the exit", "stop sandbox", "remove sandbox")
			if h.Network.AttachedCount() != 0 {
				t.Error("network of the finished pod not torn down")
			}
			if len(h.Runtime.Named(uid, "app")) != 1 {
				t.Error("exited container of the finished pod removed")
			}
			updates := h.statusUpdates()
			h.sync(st, pod)
			if calls := h.Runtime.TakeCalls(); len(calls) != 0 || h.statusUpdates() != updates {
				t.Errorf("finished pod touched again: calls %q", calls)
			}
		})
	}
}

func TestRestartPolicyOnFailure(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("job", corev1.RestartPolicyOnFailure, "app"))

	h.exitAndSync(st, pod, "app", 3)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.RestartCount != 1 || cs.State.Running == nil {
		t.Fatalf("failed container not restarted: %+v", cs)
	}
	h.exitAndSync(st, pod, "app", 0)
	if got := h.apiPod(pod); got.Status.Phase != corev1.PodSucceeded || conditionStatus(got, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("phase %s after success, want Succeeded", got.Status.Phase)
	}
}

func TestImagePullFailureBacksOff(t *testing.T) {
	h := newHarness(t)
	pod, st := h.admit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.Runtime.PullErr = os.ErrNotExist

	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync succeeded without the image")
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != images.ReasonErrImagePull {
		t.Fatalf("status after a failed pull: %+v", cs)
	}
	// The kubelet follows "Failed to pull image" with "Error: ErrImagePull",
	// and each "Back-off pulling image" with "Error: ImagePullBackOff".
	if events := h.TakeEvents(); !hasEvent(events, "Warning Failed Error: ErrImagePull") {
		t.Errorf("events after a failed pull: %q, want Warning Failed Error: ErrImagePull", events)
	}
	h.Runtime.TakeCalls()
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	// Since 1.32 the kubelet's ImagePullBackOff says what the last pull failed with.
	backOff := `Back-off pulling image "localhost/minik8s/busybox:v1": ErrImagePull: rpc error: code = Unknown desc = file does not exist`
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Waiting == nil || cs.State.Waiting.Reason != images.ReasonImagePullBackOff || cs.State.Waiting.Message != backOff {
		t.Fatalf("status during pull back-off: %+v, want ImagePullBackOff %q", cs, backOff)
	}
	if events := h.TakeEvents(); !hasEvent(events, "Warning Failed Error: ImagePullBackOff") {
		t.Errorf("events during pull back-off: %q, want Warning Failed Error: ImagePullBackOff", events)
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("pulled again during the back-off: %q", calls)
	}
	h.Runtime.PullErr = nil
	h.Clock.Step(backoffInitial)
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil {
		t.Errorf("not running after the back-off: %+v", cs)
	}
}

func TestPullPolicies(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "never", "always")
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	pod.Spec.Containers[1].ImagePullPolicy = corev1.PullAlways
	pod.Spec.Containers[1].Image = "localhost/minik8s/netexec:v1"
	pod = h.createPod(pod)
	h.Runtime.Images["localhost/minik8s/netexec:v1"] = true
	st := newPodState(pod, apiTime(h.Clock.Now()))

	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("a missing image with pull policy Never did not fail")
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "never"); cs.State.Waiting == nil || cs.State.Waiting.Reason != images.ReasonErrImageNeverPull {
		t.Errorf("status of the Never container: %+v", cs)
	}
	if calls := h.Runtime.TakeCalls(); !slices.Contains(calls, "pull localhost/minik8s/netexec:v1") {
		t.Errorf("a present image with pull policy Always was not pulled: %q", calls)
	}
	want := `Normal Pulled Successfully pulled image "localhost/minik8s/netexec:v1" in 0s (0s including waiting). Image size: 4096 bytes.`
	if events := h.TakeEvents(); !slices.Contains(events, want) {
		t.Errorf("events %q, want the kubelet's %q", events, want)
	}
}

func TestDeletionStopsTearsDownThenDeletes(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "first", "second"))
	uid := string(pod.UID)
	logDir := h.syncer.podLogDir(pod.Namespace, pod.Name, uid)
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("pod log dir: %v", err)
	}

	// What the API server does on a graceful delete.
	deleting := h.apiPod(pod)
	deleting.DeletionTimestamp = &metav1.Time{Time: h.Clock.Now()}
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](5)
	h.Runtime.TakeCalls()
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err != nil {
		t.Fatal(err)
	}

	calls := h.Runtime.TakeCalls()
	stopSandbox := slices.Index(calls, "stop sandbox")
	for _, c := range []string{"first", "second"} {
		i := slices.Index(calls, "stop "+c)
		if i < 0 || i > stopSandbox || !slices.Contains(calls, "remove "+c) {
			t.Errorf("container %s not stopped before the sandbox and removed: %q", c, calls)
		}
		if g := h.Runtime.StopGrace[c]; g != 5*time.Second {
			t.Errorf("container %s stopped with grace %s, want the deletion's 5s", c, g)
		}
	}
	if left, _ := h.Runtime.ListContainers(h.ctx, uid); len(left) != 0 {
		t.Errorf("containers left: %+v", left)
	}
	if h.Network.AttachedCount() != 0 {
		t.Error("network not torn down")
	}
	if _, err := os.Stat(filepath.Join(h.syncer.cfg.NetNSDir, uid)); !os.IsNotExist(err) {
		t.Errorf("netns still there: %v", err)
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("log dir still there: %v", err)
	}
	if !hasEvent(h.TakeEvents(), "Normal Killing") {
		t.Error("no Killing event")
	}

	var deleted bool
	for _, a := range h.Client.Actions() {
		if d, ok := a.(interface{ GetDeleteOptions() metav1.DeleteOptions }); ok && a.GetVerb() == "delete" {
			opts := d.GetDeleteOptions()
			deleted = opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0 &&
				opts.Preconditions != nil && opts.Preconditions.UID != nil && *opts.Preconditions.UID == pod.UID
		}
	}
	if !deleted {
		t.Error("no final delete with grace period 0 and a UID precondition")
	}
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Get(h.ctx, pod.Name, metav1.GetOptions{}); err == nil {
		t.Error("pod object still exists")
	}

	// Once the pod is gone, terminating again has nothing left to do.
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, true); err != nil {
		t.Fatal(err)
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("second termination touched the runtime: %q", calls)
	}
}

func TestRestartedAgentAdoptsRunningContainers(t *testing.T) {
	h := newHarness(t)
	pod := h.createPod(agenttest.Pod("web", corev1.RestartPolicyAlways, "first", "second"))
	uid := string(pod.UID)
	h.sync(newPodState(pod, apiTime(h.Clock.Now())), pod)
	h.Clock.Step(time.Second)
	h.Runtime.Exit(uid, "first", 1)
	h.sync(newPodStateFromAPI(h, pod), pod) // restartCount 1
	h.Runtime.TakeCalls()

	// A new minilet: state comes only from the API and the runtime.
	h.syncer = h.newSyncer()
	st := newPodStateFromAPI(h, pod)
	updates := h.statusUpdates()
	h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Fatalf("restarted agent changed running containers: %q", calls)
	}
	if h.statusUpdates() != updates {
		t.Error("adopting an unchanged pod wrote its status")
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "first"); cs.RestartCount != 1 {
		t.Errorf("restartCount %d after adoption, want 1", cs.RestartCount)
	}

	// A changed spec restarts that container only.
	changed := h.apiPod(pod)
	changed.Spec.Containers[1].Image = "localhost/minik8s/netexec:v1"
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).Update(h.ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	h.wantCalls("after a spec change", "stop second", "pull localhost/minik8s/netexec:v1", "create second", "start second")
	got := h.apiPod(pod)
	if cs := agenttest.ContainerStatus(got, "second"); cs.RestartCount != 1 || cs.State.Running == nil || cs.Image != "localhost/minik8s/netexec:v1" {
		t.Errorf("status of the changed container: %+v", cs)
	}
	if !hasEvent(h.TakeEvents(), "Normal Killing Container second definition changed") {
		t.Error("no Killing event for the changed container")
	}
}

func newPodStateFromAPI(h *harness, pod *corev1.Pod) *PodState {
	return newPodState(h.apiPod(pod), apiTime(h.Clock.Now()))
}

func TestAdoptedPodWithoutAddressGetsNewSandbox(t *testing.T) {
	h := newHarness(t)
	pod := h.createPod(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	uid := string(pod.UID)
	h.sync(newPodState(pod, apiTime(h.Clock.Now())), pod)

	// Status was never written (say minilet died first) and the sandbox, made by an older
	// minilet, does not record the address: the IP is unknown.
	h.Runtime.Find(h.Runtime.Named(uid, "sandbox")[0].ID).PodIP = ""
	lost := h.apiPod(pod)
	lost.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if _, err := h.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(h.ctx, lost, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.syncer = h.newSyncer()
	h.Runtime.TakeCalls()
	h.Clock.Step(time.Second)
	h.sync(newPodStateFromAPI(h, pod), pod)
	want := []string{"stop app", "stop sandbox", "remove sandbox", "remove app", "sandbox web", "create app", "start app"}
	calls := h.Runtime.TakeCalls()
	slices.Sort(calls)
	slices.Sort(want)
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	got := h.apiPod(pod)
	if got.Status.PodIP == "" || agenttest.ContainerStatus(got, "app").RestartCount != 1 {
		t.Errorf("status after a new sandbox: %+v", got.Status)
	}
	if n := len(h.Runtime.Named(uid, "sandbox")); n != 1 {
		t.Errorf("%d sandboxes, want 1", n)
	}
}

func TestStatusOnlyWrittenWhenChanged(t *testing.T) {
	h := newHarness(t)
	original := h.createPod(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	st := newPodState(original, apiTime(h.Clock.Now()))
	h.sync(st, original)
	// Two for a new pod, as the kubelet: ContainerCreating before its volumes and sandbox
	// are made (else it shows Pending with no containers until its first sync ends), then
	// Running.
	var written []corev1.PodStatus
	for _, a := range h.Client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" && a.GetResource().Resource == "pods" {
			written = append(written, u.GetObject().(*corev1.Pod).Status)
		}
	}
	if len(written) != 2 {
		t.Fatalf("%d status updates for a new pod, want 2", len(written))
	}
	if cs := written[0].ContainerStatuses; written[0].Phase != corev1.PodPending || len(cs) != 1 ||
		cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("a new pod's first status: %s %+v, want Pending with app waiting ContainerCreating", written[0].Phase, cs)
	}
	if written[1].Phase != corev1.PodRunning {
		t.Errorf("a new pod's second status: %s, want Running", written[1].Phase)
	}
	h.Clock.Step(time.Minute)
	h.sync(st, original)
	// An informer that has not caught up still shows the old status.
	if _, err := h.syncer.SyncPod(h.ctx, st, original); err != nil {
		t.Fatal(err)
	}
	if n := h.statusUpdates(); n != 2 {
		t.Errorf("%d status updates without a change, want 2", n)
	}
	h.Runtime.Exit(string(original.UID), "app", 1)
	h.sync(st, original)
	if n := h.statusUpdates(); n != 3 {
		t.Errorf("%d status updates after a container exit, want 3", n)
	}
}

// TestStartFailureBacksOffAsACrash: a container whose start fails (a command not in the
// image) is reported as the kubelet reports it: RunContainerError and a Failed event,
// then it counts as exited with StartError (128) and its restarts back off as a crashing
// container's do, instead of being retried at once on every sync.
func TestStartFailureBacksOffAsACrash(t *testing.T) {
	h := newHarness(t)
	pod, st := h.admit(agenttest.Pod("web", corev1.RestartPolicyAlways, "app"))
	h.Runtime.StartErr = os.ErrPermission

	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync succeeded although the container did not start")
	}
	cs := agenttest.ContainerStatus(h.apiPod(pod), "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonRunContainerError {
		t.Errorf("status after a failed start: %+v", cs)
	}
	if !hasEvent(h.TakeEvents(), "Warning Failed Error: "+os.ErrPermission.Error()) {
		t.Error("no Failed event")
	}
	// The first restart is at once (no back-off yet), as after a crash; it fails too.
	h.Clock.Step(time.Second)
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("the restart succeeded although the container did not start")
	}
	h.Clock.Step(time.Second)
	h.Runtime.TakeCalls()
	h.sync(st, pod)
	if calls := h.Runtime.TakeCalls(); slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "start ") }) {
		t.Errorf("started again during the back-off: %q", calls)
	}
	cs = agenttest.ContainerStatus(h.apiPod(pod), "app")
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != reasonCrashLoopBackOff || cs.RestartCount != 1 {
		t.Errorf("status during the back-off: %+v, want CrashLoopBackOff after 1 restart", cs)
	}
	if last := cs.LastTerminationState.Terminated; last == nil || last.Reason != "StartError" || last.ExitCode != 128 || last.Message != os.ErrPermission.Error() || !last.StartedAt.Equal(&metav1.Time{Time: time.Unix(0, 0)}) {
		t.Errorf("last state %+v, want StartError 128 with the error", last)
	}
	h.Runtime.StartErr = nil
	h.Clock.Step(backoffInitial)
	h.sync(st, pod)
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil || cs.RestartCount != 2 {
		t.Errorf("not running after the back-off: %+v", cs)
	}
}

// TestHostNetworkPodUsesTheNodeNetwork: a hostNetwork pod's sandbox joins the node's
// network namespace (the one minilet bound at start), is named after the node, gets the
// node's IP and never sees CNI: not when it starts, not when a sandbox left by an older
// minilet in the runtime's namespace is replaced, not when it is deleted, not when it is
// torn down as an orphan (no pod spec: the sandbox's own labels tell).
func TestHostNetworkPodUsesTheNodeNetwork(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("proxy", corev1.RestartPolicyAlways, "app")
	pod.Spec.HostNetwork = true
	pod, st := h.start(pod)

	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "10.200.0.11" {
		t.Errorf("phase %s podIP %q, want Running on the node IP", got.Status.Phase, got.Status.PodIP)
	}
	nodeNS := filepath.Join(h.syncer.cfg.RootDir, "nodens", "net")
	if n := len(h.Runtime.SandboxConfigs); n != 1 {
		t.Fatalf("%d sandboxes made, want 1", n)
	}
	if cfg := h.Runtime.SandboxConfigs[0]; cfg.NetNSPath != nodeNS || !cfg.HostNetwork || cfg.HostUTS || cfg.Hostname != testNode {
		t.Errorf("sandbox config %+v, want HostNetwork in %s with hostname %s in a UTS namespace of its own", cfg, nodeNS, testNode)
	}
	if len(h.Network.Calls) != 0 {
		t.Errorf("CNI called for a hostNetwork pod: %q", h.Network.Calls)
	}
	if _, err := os.Stat(filepath.Join(h.syncer.cfg.NetNSDir, string(pod.UID))); !os.IsNotExist(err) {
		t.Errorf("netns made for a hostNetwork pod: %v", err)
	}

	// A sandbox an older minilet left in the runtime's namespace is replaced.
	h.Runtime.Mu.Lock()
	for _, c := range h.Runtime.Containers {
		if c.Sandbox {
			c.NetNSPath, c.HostNetwork = "", false
		}
	}
	h.Runtime.Mu.Unlock()
	h.sync(st, pod)
	if n := len(h.Runtime.SandboxConfigs); n != 2 || h.Runtime.SandboxConfigs[1].NetNSPath != nodeNS {
		t.Errorf("sandbox outside the node's namespace not replaced: %d sandboxes made", n)
	}

	deleting := h.apiPod(pod).DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: h.Clock.Now()}
	if err := h.syncer.TerminatePod(h.ctx, st, deleting, false); err != nil {
		t.Fatal(err)
	}
	if left, _ := h.Runtime.ListContainers(h.ctx, string(pod.UID)); len(left) != 0 || len(h.Network.Calls) != 0 {
		t.Errorf("after deletion: containers %+v, CNI calls %q", left, h.Network.Calls)
	}

	// An orphan: torn down from what the runtime shows, without its pod.
	orphan := agenttest.Pod("agent", corev1.RestartPolicyAlways, "app")
	orphan.Spec.HostNetwork = true
	orphan = h.createPod(orphan)
	h.sync(newPodState(orphan, apiTime(h.Clock.Now())), orphan)
	if err := h.syncer.killPod(h.ctx, nil, network.PodRef{UID: string(orphan.UID)}, minGracePeriod); err != nil {
		t.Fatal(err)
	}
	if left, _ := h.Runtime.ListContainers(h.ctx, string(orphan.UID)); len(left) != 0 || len(h.Network.Calls) != 0 {
		t.Errorf("after orphan teardown: containers %+v, CNI calls %q", left, h.Network.Calls)
	}
	if _, err := os.Stat(nodeNS); err != nil {
		t.Errorf("the node's namespace went with a pod: %v", err)
	}

	// On a node that is the host, the pod shares the host's UTS namespace, as the kubelet's do.
	h.Network.NodeIsHost = true
	h.syncer = h.newSyncer()
	onHost := agenttest.Pod("on-host", corev1.RestartPolicyAlways, "app")
	onHost.Spec.HostNetwork = true
	onHost = h.createPod(onHost)
	h.sync(newPodState(onHost, apiTime(h.Clock.Now())), onHost)
	if cfg := h.Runtime.SandboxConfigs[len(h.Runtime.SandboxConfigs)-1]; cfg.NetNSPath != nodeNS || !cfg.HostUTS {
		t.Errorf("sandbox config on the host %+v, want HostUTS in %s", cfg, nodeNS)
	}
}

// TestActiveDeadlineFailsThePod: past activeDeadlineSeconds the containers stop and the
// pod fails with DeadlineExceeded; before it, the sync asks to come back at the deadline.
func TestActiveDeadlineFailsThePod(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("job", corev1.RestartPolicyNever, "app")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	pod.Spec.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod, st := h.admit(pod)
	if after := h.sync(st, pod); after != 30*time.Second {
		t.Errorf("sync asks to come back after %s, want the 30 s deadline", after)
	}
	// What the container writes as it is stopped is in the status written after the
	// release, which removed the file.
	if err := os.WriteFile(h.Runtime.Named(string(pod.UID), "app")[0].TerminationLog, []byte("stopped"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(31 * time.Second)
	h.Runtime.TakeCalls()
	h.sync(st, pod)
	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "DeadlineExceeded" {
		t.Errorf("phase %s reason %q, want Failed DeadlineExceeded", got.Status.Phase, got.Status.Reason)
	}
	if cs := agenttest.ContainerStatus(got, "app"); cs.State.Terminated == nil || cs.State.Terminated.Message != "stopped" {
		t.Errorf("container state %+v, want terminated with message stopped", cs.State)
	}
	if calls := h.Runtime.TakeCalls(); !slices.Contains(calls, "stop app") || slices.Contains(calls, "remove app") {
		t.Errorf("calls %q: want the container stopped and kept (only an evicted pod's go)", calls)
	}
	if !hasEvent(h.TakeEvents(), "Normal DeadlineExceeded") {
		t.Error("no DeadlineExceeded event")
	}
}

// TestEndFailsARunningPod: a running pod the node ends (the eviction manager's End) stops
// within the ending's grace, fails with its reason, message and DisruptionTarget, and stays
// failed when the next sync still sees it Running (an informer behind our write).
func TestEndFailsARunningPod(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("hog", corev1.RestartPolicyAlways, "app"))
	running := h.apiPod(pod)
	if running.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s before the ending", running.Status.Phase)
	}
	cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonTerminationByKubelet, Message: "low on memory"}
	done := h.syncer.End(pod.UID, Ending{Reason: "Evicted", Message: "The node was low on resource: memory. ", Condition: cond, Grace: time.Second})
	h.Runtime.TakeCalls()
	h.sync(st, running)
	select {
	case <-done:
	default:
		t.Fatal("End's done is open after the sync that ended the pod")
	}
	got := h.apiPod(pod)
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "Evicted" || got.Status.Message != "The node was low on resource: memory. " {
		t.Errorf("status %s %q %q, want Failed Evicted", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if !slices.ContainsFunc(got.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Reason == corev1.PodReasonTerminationByKubelet
	}) {
		t.Errorf("conditions %+v lack DisruptionTarget", got.Status.Conditions)
	}
	if calls := h.Runtime.TakeCalls(); !slices.Contains(calls, "stop app") || h.Runtime.StopGrace["app"] != time.Second {
		t.Errorf("calls %q, grace %v: want app stopped within the ending's 1s", calls, h.Runtime.StopGrace["app"])
	}
	// Evicted, its exited container goes (HandlePodReconcile's deleteContainersInPod), after
	// the status that was read from it.
	if left := h.Runtime.Named(string(pod.UID), "app"); len(left) != 0 {
		t.Errorf("the evicted pod's container is still there: %+v", left)
	}
	if cs := agenttest.ContainerStatus(got, "app"); cs.State.Terminated == nil {
		t.Errorf("container state %+v, want terminated", cs.State)
	}
	h.sync(st, running) // the informer's copy still says Running
	if calls := h.Runtime.TakeCalls(); slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "start") || strings.HasPrefix(c, "sandbox") }) {
		t.Errorf("a failed pod started again: %q", calls)
	}
}

// TestRestartedAgentKeepsStaticPodRunning: a static pod comes back from its file without
// any status; a restarted minilet finds its address on the running sandbox (the kubelet's
// CRI sandbox status) and leaves the pod running as it was.
func TestRestartedAgentKeepsStaticPodRunning(t *testing.T) {
	h := newHarness(t)
	manifest := []byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "static-web"},
		"spec": {"containers": [{"name": "app", "image": "localhost/minik8s/busybox:v1", "command": ["sleep", "3600"]}]}}`)
	fromFile := func() *corev1.Pod {
		pod, err := staticpod.Parse(manifest, testNode)
		if err != nil {
			t.Fatal(err)
		}
		return pod
	}
	pod := fromFile()
	st := newPodState(pod, apiTime(h.Clock.Now()))
	if _, err := h.syncer.SyncPod(h.ctx, st, pod); err != nil {
		t.Fatal(err)
	}
	if st.podIP == nil {
		t.Fatal("the static pod got no address")
	}
	h.Clock.Step(time.Second)
	h.Runtime.Exit(string(pod.UID), "app", 1)
	if _, err := h.syncer.SyncPod(h.ctx, st, pod); err != nil { // restarted: restartCount 1
		t.Fatal(err)
	}
	h.Runtime.TakeCalls()
	h.TakeEvents()

	h.syncer = h.newSyncer()
	h.Clock.Step(time.Second)
	again := fromFile()
	adopted := newPodState(again, apiTime(h.Clock.Now()))
	if _, err := h.syncer.SyncPod(h.ctx, adopted, again); err != nil {
		t.Fatal(err)
	}
	if calls := h.Runtime.TakeCalls(); len(calls) != 0 {
		t.Errorf("restarted agent changed the static pod's containers: %q", calls)
	}
	if !adopted.podIP.Equal(st.podIP) {
		t.Errorf("adopted static pod has address %s, had %s", adopted.podIP, st.podIP)
	}
	// Its restart count is the runtime's, as the kubelet reads it from the container.
	if cs := h.syncer.podStatus(adopted, again, h.Runtime.Named(string(pod.UID), "app"), true); agenttest.ContainerStatus(&corev1.Pod{Status: cs}, "app").RestartCount != 1 {
		t.Errorf("adopted static pod reports restartCount %d, want 1", agenttest.ContainerStatus(&corev1.Pod{Status: cs}, "app").RestartCount)
	}
	if events := h.TakeEvents(); len(events) != 0 {
		t.Errorf("events after the restart: %q", events)
	}
}

// TestNewSandboxKeepsLastState: when a pod starts over in a new sandbox (its sandbox died
// with the node), each new container's lastState is the old container's last run, as the
// kubelet reports it: exited, or Unknown (255) when its end went unseen.
func TestNewSandboxKeepsLastState(t *testing.T) {
	h := newHarness(t)
	pod, st := h.start(agenttest.Pod("web", corev1.RestartPolicyAlways, "exited", "vanished"))
	uid := string(pod.UID)
	old := map[string]string{}
	for _, name := range []string{"exited", "vanished"} {
		old[name] = runtime.StatusID(h.Runtime.Named(uid, name)[0].ID)
	}

	// The outage: every task dies; only one exit is on record.
	h.Clock.Step(time.Minute)
	h.Runtime.Exit(uid, "exited", 137)
	h.Runtime.Exit(uid, "sandbox", 137)
	h.Runtime.Find(h.Runtime.Named(uid, "vanished")[0].ID).State = runtime.StateUnknown
	h.Clock.Step(time.Second)
	h.sync(st, pod)

	got := h.apiPod(pod)
	for name, want := range map[string]corev1.ContainerStateTerminated{
		"exited":   {ExitCode: 137, Reason: "Error", ContainerID: old["exited"]},
		"vanished": {ExitCode: 255, Reason: "Unknown", ContainerID: old["vanished"]},
	} {
		cs := agenttest.ContainerStatus(got, name)
		last := cs.LastTerminationState.Terminated
		switch {
		case cs.State.Running == nil || cs.ContainerID == old[name] || cs.RestartCount != 1:
			t.Errorf("%s after a new sandbox: state %+v, id %s, restarts %d; want a new running container, restart 1", name, cs.State, cs.ContainerID, cs.RestartCount)
		case last == nil:
			t.Errorf("%s: no lastState after a new sandbox, want %+v", name, want)
		case last.ExitCode != want.ExitCode || last.Reason != want.Reason || last.ContainerID != want.ContainerID:
			t.Errorf("%s: lastState %+v, want %+v", name, *last, want)
		}
	}
}

// TestTokenRaceWithNodeAuthorizerMakesNoFailedMount: the API server's view of the node (the
// node authorizer's graph, fed by informers) can lag the binding minilet already saw, so
// the first token requests of a new pod are Forbidden. The pod still starts with its
// token, without a FailedMount event, as under the kubelet on a healthy cluster.
func TestTokenRaceWithNodeAuthorizerMakesNoFailedMount(t *testing.T) {
	h := newHarness(t)
	requests := 0
	h.Client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		if requests++; requests <= 2 { // the graph has not seen the binding yet
			return true, nil, apierrors.NewForbidden(corev1.Resource("serviceaccounts/token"), "default",
				errors.New("node requested token bound to a pod scheduled on a different node"))
		}
		req := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenRequest).DeepCopy()
		req.Status = authnv1.TokenRequestStatus{Token: "the-token", ExpirationTimestamp: metav1.NewTime(h.Clock.Now().Add(time.Hour))}
		return true, req, nil
	})
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}}
	pod = h.createPod(pod)
	t.Cleanup(func() { // the token's tmpfs
		if err := h.syncer.volumes.TearDown(string(pod.UID)); err != nil {
			t.Error(err)
		}
	})

	h.sync(newPodState(pod, apiTime(h.Clock.Now())), pod)
	if events := h.TakeEvents(); slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, "FailedMount") }) {
		t.Errorf("events %q, want no FailedMount", events)
	}
	if cs := agenttest.ContainerStatus(h.apiPod(pod), "app"); cs.State.Running == nil {
		t.Errorf("app after the sync: %+v, want running", cs.State)
	}
	token, err := os.ReadFile(filepath.Join(h.syncer.cfg.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~projected", "token", "token"))
	if err != nil || string(token) != "the-token" || requests != 3 {
		t.Errorf("token file %q (%v) after %d requests, want the token of the third", token, err, requests)
	}
}

// TestStartFailureUnderRestartNeverEndsAsStartError: a container that will not be
// restarted (restartPolicy Never) and whose start failed ends terminated with StartError
// and exit code 128, as the kubelet reports it (its reason cache gives Waiting only to a
// container ShouldContainerBeRestarted keeps), not waiting in RunContainerError forever.
func TestStartFailureUnderRestartNeverEndsAsStartError(t *testing.T) {
	h := newHarness(t)
	pod, st := h.admit(agenttest.Pod("once", corev1.RestartPolicyNever, "app"))
	h.Runtime.StartErr = os.ErrPermission
	if _, err := h.syncer.SyncPod(h.ctx, st, h.apiPod(pod)); err == nil {
		t.Fatal("sync succeeded although the container did not start")
	}
	h.Clock.Step(time.Second)
	h.sync(st, pod)
	got := h.apiPod(pod)
	cs := agenttest.ContainerStatus(got, "app")
	if term := cs.State.Terminated; term == nil || term.Reason != "StartError" || term.ExitCode != 128 || term.Message != os.ErrPermission.Error() {
		t.Errorf("state %+v, want terminated with StartError 128", cs.State)
	}
	if cs.LastTerminationState.Terminated != nil {
		t.Errorf("last state %+v, want none", cs.LastTerminationState)
	}
	if got.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s, want Failed", got.Status.Phase)
	}
}

// TestFailedMountIsOneEventPerVolume: each volume that cannot be set up has its own
// FailedMount event, as the kubelet's reconciler reports each volume's MountVolume.SetUp,
// not one event whose message holds every volume's failure on its own line.
func TestFailedMountIsOneEventPerVolume(t *testing.T) {
	h := newHarness(t)
	pod := agenttest.Pod("web", corev1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "late"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "later"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}}
	pod = h.createPod(pod)
	if _, err := h.syncer.SyncPod(h.ctx, newPodState(pod, apiTime(h.Clock.Now())), pod); err == nil {
		t.Fatal("sync succeeded without the pod's ConfigMap and Secret")
	}
	var mounts []string
	for _, e := range h.TakeEvents() {
		if strings.Contains(e, "FailedMount") {
			mounts = append(mounts, e)
		}
	}
	want := []string{
		`Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "late" not found`,
		`Warning FailedMount MountVolume.SetUp failed for volume "sec" : secret "later" not found`,
	}
	if !slices.Equal(mounts, want) {
		t.Errorf("FailedMount events %q, want %q", mounts, want)
	}
}
