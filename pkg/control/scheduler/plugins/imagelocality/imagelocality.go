// Package imagelocality is kube-scheduler's ImageLocality score: nodes that already hold
// the pod's images score higher, by image size scaled by how many nodes have the image (so
// one node holding a common image does not attract every pod).
package imagelocality

import (
	"context"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	corev1 "k8s.io/api/core/v1"
)

// Name is the plugin's name in profiles.
const Name = "ImageLocality"

// kube-scheduler's thresholds: below 23 MB an image is not worth preferring a node for;
// at 1000 MB per container the score is full.
const (
	mb                    int64 = 1024 * 1024
	minThreshold                = 23 * mb
	maxContainerThreshold       = 1000 * mb
)

// Plugin is the score.
type Plugin struct{ h framework.Handle }

// New makes the plugin.
func New(h framework.Handle) (framework.Plugin, error) { return Plugin{h: h}, nil }

func (Plugin) Name() string { return Name }

func (p Plugin) Score(_ context.Context, _ *framework.CycleState, pod *framework.PodInfo, n *framework.NodeInfo) (int64, *framework.Status) {
	if len(n.ImageSizes) == 0 {
		return 0, nil
	}
	nodes := p.h.Nodes()
	total := len(nodes.List())
	var sum int64
	containers := append(append([]corev1.Container(nil), pod.Pod.Spec.InitContainers...), pod.Pod.Spec.Containers...)
	for _, c := range containers {
		name := Normalized(c.Image)
		if size, ok := n.ImageSizes[name]; ok && total > 0 {
			sum += int64(float64(size) * float64(nodes.ImageNodes(name)) / float64(total))
		}
	}
	maxThreshold := maxContainerThreshold * int64(len(containers))
	sum = min(max(sum, minThreshold), maxThreshold)
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold), nil
}

// Normalized adds the :latest tag an image reference without tag or digest implies.
func Normalized(image string) string {
	if strings.Contains(image, "@") {
		return image
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image
	}
	return image + ":latest"
}
