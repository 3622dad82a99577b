package agenttest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// NodeName is the node the tests' pods are bound to.
const NodeName = "node-1"

// Pod is a pending pod on NodeName whose containers sleep in busybox.
func Pod(name string, restart corev1.RestartPolicy, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:                      NodeName,
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: c, Image: "localhost/minik8s/busybox:v1", Command: []string{"sleep", "3600"}, ImagePullPolicy: corev1.PullIfNotPresent,
		})
	}
	return pod
}

// CreatePod stores pod in the API and returns the stored copy.
func CreatePod(ctx context.Context, t testing.TB, client kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// GetPod reads a pod back from the API.
func GetPod(ctx context.Context, t testing.TB, client kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ContainerStatus is the status of pod's container called name, empty if it has none.
func ContainerStatus(pod *corev1.Pod, name string) corev1.ContainerStatus {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}
