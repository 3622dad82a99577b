// Package nodefeatures is minilet's side of NodeDeclaredFeatures (beta and on in 1.36):
// the features the node lists in status.declaredFeatures, and the admission of pods that
// need one it does not list.
package nodefeatures

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	"k8s.io/component-helpers/nodedeclaredfeatures/types"

	"github.com/minik8s/minik8s/pkg/declaredfeatures"
)

// supported are the feature gates of the registry that minilet carries out. Left out,
// though on in 1.36: ExtendWebSocketsToKubelet (the node API serves SPDY; miniapi translates
// WebSockets); UserNamespacesHostNetworkSupport is off in 1.36 and minilet refuses hostUsers: false.
var supported = types.FeatureGateMap{
	inplacepodresize.IPPRPodLevelResourcesFeatureGate:         true,
	inplacepodresize.IPPRInitContainersFeatureGate:            true,
	restartallcontainers.RestartAllContainersOnContainerExits: true,
}

var (
	declared    = declaredfeatures.Framework.DiscoverNodeFeatures(&ndf.NodeConfiguration{FeatureGates: supported, Version: declaredfeatures.Version})
	declaredSet = declaredfeatures.Framework.MustMapSorted(declared)
)

// Declared is the node's status.declaredFeatures, sorted as the kubelet publishes them.
func Declared() []string { return append([]string(nil), declared...) }

// Admission refuses a pod that needs a feature the node does not declare, as the
// kubelet's DeclaredFeaturesAdmitHandler.
type Admission struct{}

func (Admission) Admit(pod *corev1.Pod) (ok bool, reason, message string) {
	const unsupported = "PodFeatureUnsupported"
	reqs, err := declaredfeatures.Framework.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, declaredfeatures.Version)
	if err != nil {
		return false, unsupported, fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)
	}
	if reqs.IsEmpty() {
		return true, "", ""
	}
	match, err := declaredfeatures.Framework.MatchNodeFeatureSet(reqs, declaredSet)
	if err != nil {
		return false, unsupported, fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)
	}
	if !match.IsMatch {
		return false, unsupported, "Pod requires node features that are not available: " + strings.Join(match.UnsatisfiedRequirements, ", ")
	}
	return true, "", ""
}
