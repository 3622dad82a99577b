package deletioncost

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestOf(t *testing.T) {
	for value, want := range map[string]int32{"0": 0, "-5": -5, "2147483647": 2147483647, "-2147483648": -2147483648} {
		got, err := Of(map[string]string{corev1.PodDeletionCost: value})
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", value, got, err, want)
		}
	}
	if got, err := Of(map[string]string{"other": "1"}); got != 0 || err != nil {
		t.Errorf("no annotation: %d, %v", got, err)
	}
	for _, value := range []string{"", "+1", "007", "-", "1.5", "2147483648", "ten", " 1"} {
		if got, err := Of(map[string]string{corev1.PodDeletionCost: value}); err == nil || got != 0 {
			t.Errorf("%q: %d, %v; want an error and 0", value, got, err)
		}
	}
}
