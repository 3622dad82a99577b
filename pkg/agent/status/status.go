// Package status is the kubelet's status manager's part of minilet: the pod phase and the
// conditions the kubelet owns, computed from container statuses, and their write through
// pods/status beside the conditions other writers own.
package status

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/restartpolicy"
)

// kubeletConditions are the pod conditions the kubelet sets, in the order it writes
// them (after the conditions others own), as `kubectl describe pod` lists them.
var kubeletConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled,
	corev1.AllContainersRestarting, corev1.PodResizePending, corev1.PodResizeInProgress,
}

// Owned are the conditions the kubelet sets, kubeletConditions as a set.
var Owned = sets.New(kubeletConditions...)

// inKubeletOrder puts the conditions others own first, as they are, then ours in
// kubeletConditions' order: the order of the kubelet's status merge.
func inKubeletOrder(conds []corev1.PodCondition) []corev1.PodCondition {
	out := make([]corev1.PodCondition, 0, len(conds))
	for _, c := range conds {
		if !Owned.Has(c.Type) {
			out = append(out, c)
		}
	}
	for _, t := range kubeletConditions {
		for _, c := range conds {
			if c.Type == t {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// Phase is the kubelet's getPhase (pkg/kubelet/kubelet_pods.go) for the sidecars and app
// containers of a pod with spec (the regular init containers are the caller's: they keep
// it Pending or fail it). A running sidecar counts as a running container, so a pod whose
// app containers have finished runs on until its sidecars are stopped; a stopped or
// restarting sidecar does not count. Once none runs, the pod runs on while an app container
// will restart, as restartpolicy.ContainerShouldRestart says of its exit code. terminal: the pod is being
// ended, so none restarts whatever its policy. A container without a status keeps the pod
// Pending.
func Phase(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	var unknown, running, waiting, stopped, stoppedForGood, succeeded int
	for i := range spec.InitContainers {
		if !IsSidecar(&spec.InitContainers[i]) {
			continue
		}
		cs := named(initStatuses, spec.InitContainers[i].Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
			waiting++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		cs := named(statuses, c.Name)
		var last *corev1.ContainerStateTerminated
		switch {
		case cs == nil:
			unknown++
			continue
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			last = cs.State.Terminated
			if last.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil: // waiting to restart
			last = cs.LastTerminationState.Terminated
		default:
			waiting++
		}
		if last != nil {
			stopped++
			if !RunsAgain(spec, c, last) {
				stoppedForGood++
			}
		}
	}
	switch {
	case waiting > 0 || unknown > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped == 0:
		return corev1.PodPending
	case !terminal && stopped != stoppedForGood:
		return corev1.PodRunning // some restart
	case stopped == succeeded:
		return corev1.PodSucceeded
	default:
		return corev1.PodFailed
	}
}

// named is the status of the container called name in statuses, nil when it has none.
func named(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	i := slices.IndexFunc(statuses, func(cs corev1.ContainerStatus) bool { return cs.Name == name })
	if i < 0 {
		return nil
	}
	return &statuses[i]
}

// RestartingAllContainers is the reason a container removed by a restart of all the pod's
// containers terminated with, as the kubelet reports it.
const RestartingAllContainers = "RestartingAllContainers"

// RunsAgain: container c, which ended its last run as last says, will run again — as
// ContainerShouldRestart says of its exit code, or, removed by a restart of all the pod's
// containers, in any case (the kubelet's getPhase).
func RunsAgain(spec *corev1.PodSpec, c *corev1.Container, last *corev1.ContainerStateTerminated) bool {
	return last.Reason == RestartingAllContainers || restartpolicy.ContainerShouldRestart(spec, c, last.ExitCode)
}

// IsSidecar: an init container with restartPolicy Always is a sidecar, started in order
// with the others but kept running beside the app containers.
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// SetConditions sets the conditions the kubelet owns for a pod of spec at now, each
// observed at the pod's generation (as the kubelet with PodObservedGenerationTracking, GA
// in 1.35); each keeps its lastTransitionTime while its status stays the same.
func SetConditions(s *corev1.PodStatus, now metav1.Time, generation int64, sandboxReady bool, uninitialized []string, spec *corev1.PodSpec) {
	ready, containersReady := readiness(s, spec)
	sandbox := corev1.ConditionFalse
	if sandboxReady {
		sandbox = corev1.ConditionTrue
	}
	set := func(typ corev1.PodConditionType, c corev1.PodCondition) {
		c.Type = typ
		c.ObservedGeneration = generation
		SetCondition(s, c, now)
	}
	set(corev1.PodReadyToStartContainers, corev1.PodCondition{Status: sandbox})
	initialized := corev1.PodCondition{Status: corev1.ConditionTrue}
	switch {
	case s.Phase == corev1.PodSucceeded:
		initialized.Reason = "PodCompleted"
	case len(uninitialized) > 0:
		initialized = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(uninitialized, " "))}
	}
	set(corev1.PodInitialized, initialized)
	set(corev1.PodReady, ready)
	set(corev1.ContainersReady, containersReady)
	if c := Condition(s, corev1.PodScheduled); c == nil {
		set(corev1.PodScheduled, corev1.PodCondition{Status: corev1.ConditionTrue})
	} else {
		c.ObservedGeneration = generation
	}
	s.Conditions = inKubeletOrder(s.Conditions)
}

// readiness is the Ready and ContainersReady conditions a status of a pod of spec calls
// for, from its containers' readiness and the pod's readiness gates (the kubelet's
// GeneratePodReadyCondition): the sidecars and then the app containers count, each named
// in the spec's order.
func readiness(s *corev1.PodStatus, spec *corev1.PodSpec) (ready, containersReady corev1.PodCondition) {
	var unknown, unready []string
	count := func(c *corev1.Container, statuses []corev1.ContainerStatus) {
		switch cs := named(statuses, c.Name); {
		case cs == nil:
			unknown = append(unknown, c.Name)
		case !cs.Ready:
			unready = append(unready, c.Name)
		}
	}
	for i := range spec.InitContainers {
		if IsSidecar(&spec.InitContainers[i]) {
			count(&spec.InitContainers[i], s.InitContainerStatuses)
		}
	}
	for i := range spec.Containers {
		count(&spec.Containers[i], s.ContainerStatuses)
	}
	var notReady []string
	if len(unknown) > 0 {
		notReady = append(notReady, fmt.Sprintf("containers with unknown status: [%s]", strings.Join(unknown, " ")))
	}
	if len(unready) > 0 {
		notReady = append(notReady, fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " ")))
	}
	containersReady = corev1.PodCondition{Status: corev1.ConditionTrue}
	switch { // a finished pod's reason has no message, as the kubelet's generateContainersReadyConditionForTerminalPhase
	case s.Phase == corev1.PodSucceeded && len(unknown) == 0:
		containersReady = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "PodCompleted"}
	case s.Phase == corev1.PodFailed:
		containersReady = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "PodFailed"}
	case len(notReady) > 0:
		containersReady = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: strings.Join(notReady, ", ")}
	}
	ready = containersReady
	if unmet := unmetReadinessGates(s, spec.ReadinessGates); ready.Status == corev1.ConditionTrue && len(unmet) > 0 {
		ready = corev1.PodCondition{Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady", Message: strings.Join(unmet, ", ")}
	}
	return ready, containersReady
}

// NeedsReadinessSync reports whether a pod shows a Ready condition out of line with its
// containers and readiness gates, so that its worker syncs to write Ready anew. For a gate
// another controller set this is the kubelet's NeedToReconcilePodReadiness; for a Ready
// another writer changed (the node lifecycle controller's MarkPodsNotReady) it stands for
// the status manager's reconcile, which rewrites such a status within its 10 s syncPeriod.
func NeedsReadinessSync(pod *corev1.Pod) bool {
	cur := Condition(&pod.Status, corev1.PodReady)
	want, _ := readiness(&pod.Status, &pod.Spec)
	return cur != nil && (cur.Status != want.Status || cur.Message != want.Message)
}

// unmetReadinessGates says, in the kubelet's words, which of the pod's readiness gates
// (conditions other controllers set) are not True.
func unmetReadinessGates(s *corev1.PodStatus, gates []corev1.PodReadinessGate) []string {
	var unmet []string
	for _, g := range gates {
		c := Condition(s, g.ConditionType)
		switch {
		case c == nil:
			unmet = append(unmet, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case c.Status != corev1.ConditionTrue:
			unmet = append(unmet, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
		}
	}
	return unmet
}

// SetCondition sets c in s; its transition time is now unless the
// condition already had c's status.
func SetCondition(s *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	c.LastTransitionTime = now
	if old := Condition(s, c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// Condition is s's condition of type typ, nil when it has none.
func Condition(s *corev1.PodStatus, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Writer writes pods' statuses through pods/status, as the kubelet's status manager.
type Writer struct {
	client kubernetes.Interface
	// mirrorOf is a static pod's mirror pod, nil while it has none.
	mirrorOf func(*corev1.Pod) *corev1.Pod
}

// NewWriter makes a Writer writing through client; mirrorOf finds static pods' mirrors.
func NewWriter(client kubernetes.Interface, mirrorOf func(*corev1.Pod) *corev1.Pod) *Writer {
	return &Writer{client: client, mirrorOf: mirrorOf}
}

// Update writes a pod's status, only when it differs from both the pod as last seen and
// last, the status last written for it (nil: none). It returns the status written since:
// status when written, last when not.
func (w *Writer) Update(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus, last *corev1.PodStatus) (*corev1.PodStatus, error) {
	// A static pod's status shows on its mirror, once there is one; a mirror made anew
	// starts empty, so only what it holds counts.
	static := staticpod.IsStatic(pod)
	if static {
		if pod = w.mirrorOf(pod); pod == nil {
			return last, nil
		}
	}
	if apiequality.Semantic.DeepEqual(pod.Status, status) ||
		(!static && last != nil && apiequality.Semantic.DeepEqual(*last, status)) {
		return last, nil
	}
	pods := w.client.CoreV1().Pods(pod.Namespace)
	base := pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated := base.DeepCopy()
		updated.Status = WithTheirConditions(status, base.Status)
		_, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		base = latest
		return err
	})
	if apierrors.IsNotFound(err) {
		return last, nil // deleted meanwhile; its worker hears of it from the informer
	}
	if err != nil {
		return last, fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return status.DeepCopy(), nil
}

// WithTheirConditions is our status with the conditions other writers own (readiness
// gates, DisruptionTarget ...) as the API has them now: a status computed from an older
// copy of the pod must not undo their writes.
// A DisruptionTarget of ours goes in as the pod fails, as the kubelet's status merge adds
// its own (a pod the node evicted).
func WithTheirConditions(ours, current corev1.PodStatus) corev1.PodStatus {
	ourDisruption := ours.Phase == corev1.PodFailed && slices.ContainsFunc(ours.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget
	})
	kept := func(t corev1.PodConditionType) bool {
		return Owned.Has(t) || ourDisruption && t == corev1.DisruptionTarget
	}
	out := ours
	out.Conditions = nil
	for _, c := range current.Conditions {
		if !kept(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	for _, c := range ours.Conditions {
		if kept(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}
