// Package defaulttolerationseconds is Kubernetes' DefaultTolerationSeconds admission
// plugin: a pod created without tolerating the not-ready and unreachable NoExecute taints
// tolerates them for 300 s, the time the node lifecycle controller leaves it on a failed
// node before evicting it.
package defaulttolerationseconds

import (
	"context"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
)

// Seconds is kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
const Seconds = 300

// Plugin has no state.
type Plugin struct{}

// Admit adds the tolerations a pod being created lacks.
func (Plugin) Admit(_ context.Context, a *generic.Attributes) error {
	pod := admission.PodCreate(a)
	if pod == nil {
		return nil
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
				tolerated = true
			}
		}
		if !tolerated {
			seconds := int64(Seconds)
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
	return nil
}
