// Package defaultbinder is kube-scheduler's DefaultBinder: a Binding posted to the API.
package defaultbinder

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Name is the plugin's name in profiles.
const Name = "DefaultBinder"

// Plugin is the binder.
type Plugin struct{ client kubernetes.Interface }

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) { return Plugin{client: h.Client()}, nil }

func (Plugin) Name() string { return Name }

func (p Plugin) Bind(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	return framework.AsStatus(p.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}))
}
