package apps

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
)

func statusUpdate(r registry.Rules, obj, old runtime.Object) field.ErrorList {
	return r.SubresourceUpdates["status"].Validate(obj, old)
}

// TestStatusWritesValidatedAsKube: a status write with impossible counts is refused in
// kube-apiserver v1.36.3's words and order (side by side with the same patches).
func TestStatusWritesValidatedAsKube(t *testing.T) {
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: -1, ReadyReplicas: 5, ObservedGeneration: -2}}
	registrytest.ExpectMessages(t, "deployment", statusUpdate(DeploymentRules, d, &appsv1.Deployment{}),
		`status.observedGeneration: Invalid value: -2: must be greater than or equal to 0`,
		`status.replicas: Invalid value: -1: must be greater than or equal to 0`,
		`status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas`,
		`status.readyReplicas: Invalid value: 5: cannot be greater than status.replicas`,
		`status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas`)

	s := &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: -1, AvailableReplicas: 2}}
	registrytest.ExpectMessages(t, "statefulset", statusUpdate(StatefulSetRules, s, &appsv1.StatefulSet{}),
		`status.replicas: Invalid value: -1: must be greater than or equal to 0`,
		`status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas`,
		`status.currentReplicas: Invalid value: 0: cannot be greater than status.replicas`,
		`status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas`,
		`status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas`,
		`status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas`)

	rs := &appsv1.ReplicaSet{Status: appsv1.ReplicaSetStatus{Replicas: -1, FullyLabeledReplicas: 3}}
	registrytest.ExpectMessages(t, "replicaset", statusUpdate(ReplicaSetRules, rs, &appsv1.ReplicaSet{}),
		`status.replicas: Invalid value: -1: must be greater than or equal to 0`,
		`status.fullyLabeledReplicas: Invalid value: 3: cannot be greater than status.replicas`,
		`status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas`,
		`status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas`)

	ds := &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{NumberReady: -1, DesiredNumberScheduled: -1, CollisionCount: ptr.To[int32](1)}}
	registrytest.ExpectMessages(t, "daemonset", statusUpdate(DaemonSetRules, ds, &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{CollisionCount: ptr.To[int32](2)}}),
		`status.desiredNumberScheduled: Invalid value: -1: must be greater than or equal to 0`,
		`status.numberReady: Invalid value: -1: must be greater than or equal to 0`,
		`status.collisionCount: Invalid value: 1: cannot be decremented`)

	// What the controllers write passes: counts within the replicas.
	ok := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 1, ObservedGeneration: 4}}
	registrytest.ExpectMessages(t, "valid deployment status", statusUpdate(DeploymentRules, ok, &appsv1.Deployment{}))
}
