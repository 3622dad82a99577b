package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/network"
)

// terminatePod stops and removes everything of a pod being deleted (or
// already gone from the API), then deletes a gracefully deleted pod for good
// (grace period 0), as the kubelet does once its containers have stopped.
func (a *Agent) terminatePod(ctx context.Context, st *podState, pod *corev1.Pod, gone bool) error {
	if a.probes != nil {
		a.probes.forget(pod.UID) // probes of a terminating pod stop
	}
	if !st.terminated {
		if err := a.killPod(ctx, pod, podRef(pod), gracePeriod(pod)); err != nil {
			return fmt.Errorf("stop pod %s: %w", podKey(pod), err)
		}
		if err := cm.RemovePodCgroup(a.cfg.CgroupRoot, string(pod.UID)); err != nil {
			return fmt.Errorf("remove cgroups of pod %s: %w", podKey(pod), err)
		}
		if err := a.volumes.TearDown(string(pod.UID)); err != nil {
			return fmt.Errorf("tear down volumes of pod %s: %w", podKey(pod), err)
		}
		if err := os.RemoveAll(a.podLogDir(pod.Namespace, pod.Name, string(pod.UID))); err != nil {
			return fmt.Errorf("remove logs of pod %s: %w", podKey(pod), err)
		}
		st.terminated = true
	}
	if gone {
		return nil
	}
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) { // Conflict: a newer pod of that name
		return fmt.Errorf("delete pod %s: %w", podKey(pod), err)
	}
	return nil
}

// killPod stops every container of a pod (its containers in parallel, then
// its sandbox), removes them and frees its network. pod is nil for an
// orphan, which gets no events.
func (a *Agent) killPod(ctx context.Context, pod *corev1.Pod, ref network.PodRef, grace time.Duration) error {
	all, err := a.rt.ListContainers(ctx, ref.UID)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	apps := appContainersOf(all)
	if err := a.stopContainers(ctx, pod, apps, grace); err != nil {
		return err
	}
	if err := a.releaseSandbox(ctx, ref, sandboxesOf(all)); err != nil {
		return err
	}
	return a.removeContainers(ctx, apps)
}
