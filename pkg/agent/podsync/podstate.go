package podsync

import (
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/starttrace"
	"github.com/minik8s/minik8s/pkg/agent/status"
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
	// previous is each container's last run before the pod's sandbox was made anew (those
	// containers are removed): its lastState until the new one has ended a run itself.
	previous map[string]runtime.Container
	// restartedAll: the container was removed by a restart of all the pod's containers, so
	// its lastState says so until its new run has ended too (restartall.go).
	restartedAll map[string]bool
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
		previous:        map[string]runtime.Container{},
		restartedAll:    map[string]bool{},
		waiting:         map[string]corev1.ContainerStateWaiting{},
		terminationLogs: terminationLogs{},
	}
	if pod.Status.StartTime != nil {
		st.startTime = *pod.Status.StartTime
	}
	for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		st.restartCounts[cs.Name] = cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == status.RestartingAllContainers {
			st.restartedAll[cs.Name] = true
		}
	}
	return st
}
