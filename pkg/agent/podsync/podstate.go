package podsync

import (
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/starttrace"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// PodState is what the syncer remembers about one pod between syncs. Only the
// pod's worker goroutine touches it. It starts from the pod's last reported
// status, so a restarted minilet adopts running pods instead of recreating them.
type PodState struct {
	podIP         net.IP
	startTime     metav1.Time
	restartCounts map[string]int32
	// removed is what each container removed from the runtime (its pod's sandbox made anew,
	// or all its containers restarted) leaves to its next run; a new removal replaces it.
	// A minilet started anew takes it from the lastStates of the pod's status.
	removed map[string]removedRun
	// waiting says why a container is not running now (ErrImagePull,
	// CrashLoopBackOff ...); a started container clears its entry.
	waiting map[string]corev1.ContainerStateWaiting
	// lastStatus is the status last written, so an informer that has not
	// caught up yet does not cause a second identical write.
	lastStatus *corev1.PodStatus
	// released: the sandbox and network of a finished pod are gone.
	released bool
	// terminationLogs hold the termination messages of a released pod's containers.
	terminationLogs terminationLogs
	// terminated: everything of a deleted pod is gone.
	terminated bool
	// volumes are the pod's volumes as the last sync set them up.
	volumes map[string]volumes.Volume
	// imagePulls are how the last sync made its image volumes' images present, by volume.
	imagePulls map[string]imagePull
	// netChecked is when CNI CHECK last found the sandbox's network intact.
	netChecked time.Time
	// trace times a new pod's start (nil for a pod that already ran: adopted after a restart).
	trace *starttrace.Trace
	// resizeErr: the last in-place resize of the pod's containers failed, so (reported as
	// PodResizeInProgress with reason Error).
	resizeErr error
	// actuatedPodResources are the pod-level resources its cgroup was last set to (the
	// kubelet's actuated state); podResourcesActuated says whether that is known.
	actuatedPodResources *corev1.ResourceRequirements
	podResourcesActuated bool
	// podCgroupOpen: resizePod lifted the pod cgroup's limits, for finishResize to set.
	podCgroupOpen bool
	// resizePending: the pod's resize does not fit on the node yet (allocation.go).
	resizePending *resizePending
	// resizeStarted: a resize was granted (ResizeStarted) and is not yet applied
	// (ResizeCompleted).
	resizeStarted bool
	// resizeGeneration is the pod's generation when the node granted the resize it is
	// applying (PodResizeInProgress, at that generation); 0 when none is in progress.
	resizeGeneration int64
	// resizeErrMessage is the last failed resize's error, reported once as ResizeError.
	resizeErrMessage string
}

func newPodState(pod *corev1.Pod, now metav1.Time) *PodState {
	st := &PodState{
		podIP:           net.ParseIP(pod.Status.PodIP),
		startTime:       now,
		restartCounts:   map[string]int32{},
		removed:         map[string]removedRun{},
		waiting:         map[string]corev1.ContainerStateWaiting{},
		terminationLogs: terminationLogs{},
	}
	if pod.Status.StartTime != nil {
		st.startTime = *pod.Status.StartTime
	}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		st.restartCounts[cs.Name] = cs.RestartCount
		// A lastState the runtime no longer has, the status carries (carriedLastState).
		if t := cs.LastTerminationState.Terminated; t != nil {
			st.removed[cs.Name] = removedRun{lastState: t.DeepCopy()}
		}
	}
	return st
}

// removedRun is what a container's removed run leaves to its next one, as the kubelet
// carries it over from the pod's previous status (convertToAPIContainerStatuses).
type removedRun struct {
	// lastState is the next run's lastState until it has ended a run of its own.
	lastState *corev1.ContainerStateTerminated
	// uncounted: the container waited to restart when it was removed, so its next start
	// still counts a restart (the kubelet numbers it after the logs it kept).
	uncounted bool
}

// vanishedMessage is the kubelet's word for a container that ran and is gone from the
// runtime without having been seen to end (convertToAPIContainerStatuses).
const vanishedMessage = "The container could not be located when the pod was deleted.  The container used to be Running"

// noteVanished: a container the status last written had running, with no run before it,
// that the runtime no longer has at all (removed behind minilet's back, or a runtime that
// lost its state) ended as the kubelet infers it: its lastState is ContainerStatusUnknown
// with exit code 137 (convertToAPIContainerStatuses). Its next start counts a restart
// (syncContainer: its log is still there).
func (st *PodState) noteVanished(pod *corev1.Pod, all []runtime.Container) {
	if st.lastStatus == nil || pod.DeletionTimestamp != nil {
		return
	}
	for _, cs := range slices.Concat(st.lastStatus.InitContainerStatuses, st.lastStatus.ContainerStatuses) {
		if cs.State.Running == nil || cs.LastTerminationState.Terminated != nil || len(containersNamed(all, cs.Name)) > 0 {
			continue
		}
		st.removed[cs.Name] = removedRun{lastState: &corev1.ContainerStateTerminated{
			Reason: "ContainerStatusUnknown", Message: vanishedMessage, ExitCode: 137}}
	}
}

// carriedLastState is the lastState a container whose runs are history (newest first)
// carries from its removed run: while it has not had a run since, or while that run is
// its only one and has not ended (its status then gives none).
func (st *PodState) carriedLastState(name string, history []runtime.Container) *corev1.ContainerStateTerminated {
	r, ok := st.removed[name]
	if !ok || len(history) > 1 || len(history) == 1 && runtime.StatusID(history[0].ID) == r.lastState.ContainerID {
		return nil
	}
	return r.lastState.DeepCopy()
}
