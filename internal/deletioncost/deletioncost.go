// Package deletioncost reads a pod's controller.kubernetes.io/pod-deletion-cost annotation
// as Kubernetes does (helper.GetDeletionCostFromPodAnnotations): the API server refuses a
// value it cannot read, and the ReplicaSet controller scales down the cheapest pods first.
package deletioncost

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Of is the cost the annotations give, 0 without one. A value with a sign other than
// '-' or a leading zero ("+10", "007") is refused, as Kubernetes refuses it; the error
// leaves the cost at 0.
func Of(annotations map[string]string) (int32, error) {
	value, ok := annotations[corev1.PodDeletionCost]
	if !ok {
		return 0, nil
	}
	if !validFirstDigit(value) {
		return 0, fmt.Errorf("invalid value %q", value)
	}
	cost, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return 0, err
	}
	return int32(cost), nil
}

func validFirstDigit(s string) bool {
	return s != "" && (s[0] == '-' || s == "0" || (s[0] >= '1' && s[0] <= '9'))
}
