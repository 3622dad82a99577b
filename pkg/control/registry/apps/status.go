package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minik8s/minik8s/pkg/control/registry"
)

// The status subresources' checks, kube's ValidateDeploymentStatusUpdate,
// ValidateReplicaSetStatusUpdate, ValidateStatefulSetStatusUpdate and
// ValidateDaemonSetStatusUpdate in their order: a status write checks only the status.

var statusPath = field.NewPath("status")

func statusRules(validate func(obj, old runtime.Object) field.ErrorList) map[string]registry.SubresourceRules {
	return map[string]registry.SubresourceRules{"status": {Validate: validate}}
}

func validateDeploymentStatus(obj, old runtime.Object) field.ErrorList {
	s, o := &obj.(*appsv1.Deployment).Status, &old.(*appsv1.Deployment).Status
	c := registry.Count32
	errs := registry.StatusCounts(statusPath, registry.Count{Name: "observedGeneration", Value: s.ObservedGeneration},
		c("replicas", s.Replicas), c("updatedReplicas", s.UpdatedReplicas), c("readyReplicas", s.ReadyReplicas),
		c("availableReplicas", s.AvailableReplicas), c("unavailableReplicas", s.UnavailableReplicas))
	errs = append(errs, registry.NonNegative(s.TerminatingReplicas, statusPath.Child("terminatingReplicas"))...)
	errs = append(errs, registry.NonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
	errs = append(errs, registry.NotAbove(statusPath, int64(s.Replicas), "status.replicas",
		c("updatedReplicas", s.UpdatedReplicas), c("readyReplicas", s.ReadyReplicas), c("availableReplicas", s.AvailableReplicas))...)
	errs = append(errs, registry.NotAbove(statusPath, int64(s.ReadyReplicas), "readyReplicas", c("availableReplicas", s.AvailableReplicas))...)
	return append(errs, registry.Decremented(s.CollisionCount, o.CollisionCount, statusPath.Child("collisionCount"))...)
}

func validateReplicaSetStatus(obj, _ runtime.Object) field.ErrorList {
	s := &obj.(*appsv1.ReplicaSet).Status
	return registry.ReplicaSetStatus(statusPath, s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas, s.ObservedGeneration, s.TerminatingReplicas)
}

func validateStatefulSetStatus(obj, old runtime.Object) field.ErrorList {
	s, o := &obj.(*appsv1.StatefulSet).Status, &old.(*appsv1.StatefulSet).Status
	c := registry.Count32
	errs := registry.StatusCounts(statusPath, c("replicas", s.Replicas), c("readyReplicas", s.ReadyReplicas),
		c("currentReplicas", s.CurrentReplicas), c("updatedReplicas", s.UpdatedReplicas), c("availableReplicas", s.AvailableReplicas))
	errs = append(errs, registry.StatusCounts(statusPath, registry.Count{Name: "observedGeneration", Value: s.ObservedGeneration})...)
	errs = append(errs, registry.NonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
	errs = append(errs, registry.NotAbove(statusPath, int64(s.Replicas), "status.replicas", c("readyReplicas", s.ReadyReplicas),
		c("currentReplicas", s.CurrentReplicas), c("updatedReplicas", s.UpdatedReplicas), c("availableReplicas", s.AvailableReplicas))...)
	errs = append(errs, registry.NotAbove(statusPath, int64(s.ReadyReplicas), "status.readyReplicas", c("availableReplicas", s.AvailableReplicas))...)
	return append(errs, registry.Decremented(s.CollisionCount, o.CollisionCount, statusPath.Child("collisionCount"))...)
}

func validateDaemonSetStatus(obj, old runtime.Object) field.ErrorList {
	s, o := &obj.(*appsv1.DaemonSet).Status, &old.(*appsv1.DaemonSet).Status
	c := registry.Count32
	errs := registry.StatusCounts(statusPath, c("currentNumberScheduled", s.CurrentNumberScheduled), c("numberMisscheduled", s.NumberMisscheduled),
		c("desiredNumberScheduled", s.DesiredNumberScheduled), c("numberReady", s.NumberReady), registry.Count{Name: "observedGeneration", Value: s.ObservedGeneration},
		c("updatedNumberScheduled", s.UpdatedNumberScheduled), c("numberAvailable", s.NumberAvailable), c("numberUnavailable", s.NumberUnavailable))
	errs = append(errs, registry.NonNegative(s.CollisionCount, statusPath.Child("collisionCount"))...)
	return append(errs, registry.Decremented(s.CollisionCount, o.CollisionCount, statusPath.Child("collisionCount"))...)
}
