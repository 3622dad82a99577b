package namespace

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// content is what a pass over a terminating namespace found still there: objects per
// resource and objects per finalizer holding them.
type content struct {
	remaining  map[schema.GroupVersionResource]int
	finalizers map[string]int
}

func newContent() content {
	return content{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
}

// The deletion conditions kube-controller-manager keeps on a terminating namespace, in its
// order, and the reason and message each has while nothing is wrong.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

var okConditions = map[corev1.NamespaceConditionType][2]string{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// failures are the conditions that do not hold their "ok" value after a pass: what is
// left, and the discovery or deletion errors met.
func (c content) failures(discoveryErr error, deleteErrs []string) map[corev1.NamespaceConditionType][2]string {
	out := map[corev1.NamespaceConditionType][2]string{}
	var groupErr *discovery.ErrGroupDiscoveryFailed
	switch {
	case errors.As(discoveryErr, &groupErr):
		out[corev1.NamespaceDeletionDiscoveryFailure] = [2]string{"DiscoveryFailed",
			fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groupErr.Groups), discoveryErr)}
	case discoveryErr != nil:
		out[corev1.NamespaceDeletionDiscoveryFailure] = [2]string{"DiscoveryFailed", discoveryErr.Error()}
	}
	if len(deleteErrs) > 0 {
		sort.Strings(deleteErrs)
		out[corev1.NamespaceDeletionContentFailure] = [2]string{"ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(deleteErrs), strings.Join(deleteErrs, ", "))}
	}
	var left []string
	for gvr, n := range c.remaining {
		left = append(left, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
	}
	if len(left) > 0 {
		sort.Strings(left)
		out[corev1.NamespaceContentRemaining] = [2]string{"SomeResourcesRemain", "Some resources are remaining: " + strings.Join(left, ", ")}
	}
	var held []string
	for f, n := range c.finalizers {
		held = append(held, fmt.Sprintf("%s in %d resource instances", f, n))
	}
	if len(held) > 0 {
		sort.Strings(held)
		out[corev1.NamespaceFinalizersRemaining] = [2]string{"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: " + strings.Join(held, ", ")}
	}
	return out
}

// setConditions writes the five deletion conditions into status, True for a failure and
// False with the "ok" reason otherwise, and says whether anything changed. A condition's
// transition time moves only when its status does.
func setConditions(status *corev1.NamespaceStatus, failures map[corev1.NamespaceConditionType][2]string) (changed bool) {
	now := metav1.Now()
	for _, t := range conditionTypes {
		want := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, LastTransitionTime: now}
		rm, failed := failures[t]
		if failed {
			want.Status = corev1.ConditionTrue
		} else {
			rm = okConditions[t]
		}
		want.Reason, want.Message = rm[0], rm[1]
		old := condition(status, t)
		switch {
		case old == nil:
			status.Conditions = append(status.Conditions, want)
			changed = true
		case old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message:
			if old.Status != want.Status {
				old.LastTransitionTime = now
			}
			old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func condition(status *corev1.NamespaceStatus, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}
