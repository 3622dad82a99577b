package registry

import (
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Count is a status count by its field name, for kube's checks of workloads' status.
type Count struct {
	Name  string
	Value int64
}

// Count32 is a count held in an int32 field, as most status counts are.
func Count32(name string, v int32) Count { return Count{Name: name, Value: int64(v)} }

// StatusCounts is kube's check of a status's counts, in their order: each non-negative.
func StatusCounts(path *field.Path, counts ...Count) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		errs = append(errs, validation.ValidateNonnegativeField(c.Value, path.Child(c.Name))...)
	}
	return errs
}

// NotAbove is kube's check that the counts, in their order, are not above limit (named
// in limitText).
func NotAbove(path *field.Path, limit int64, limitText string, counts ...Count) field.ErrorList {
	var errs field.ErrorList
	for _, c := range counts {
		if c.Value > limit {
			errs = append(errs, field.Invalid(path.Child(c.Name), c.Value, "cannot be greater than "+limitText))
		}
	}
	return errs
}

// Decremented is kube's check that a collision count does not go down.
func Decremented(count, old *int32, path *field.Path) field.ErrorList {
	if old == nil || (count != nil && *count >= *old) {
		return nil
	}
	value := int32(0)
	if count != nil {
		value = *count
	}
	return field.ErrorList{field.Invalid(path, value, "cannot be decremented")}
}

// ReplicaSetStatus is kube's ValidateReplicaSetStatus, also its
// ValidateReplicationControllerStatus (which has no terminating count).
func ReplicaSetStatus(path *field.Path, replicas, fullyLabeled, ready, available int32, observedGeneration int64, terminating *int32) field.ErrorList {
	c := Count32
	errs := StatusCounts(path, c("replicas", replicas), c("fullyLabeledReplicas", fullyLabeled), c("readyReplicas", ready),
		c("availableReplicas", available), Count{Name: "observedGeneration", Value: observedGeneration})
	errs = append(errs, NonNegative(terminating, path.Child("terminatingReplicas"))...)
	errs = append(errs, NotAbove(path, int64(replicas), "status.replicas", c("fullyLabeledReplicas", fullyLabeled), c("readyReplicas", ready), c("availableReplicas", available))...)
	return append(errs, NotAbove(path, int64(ready), "readyReplicas", c("availableReplicas", available))...)
}
