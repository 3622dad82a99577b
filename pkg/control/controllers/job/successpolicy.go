package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// matchSuccessPolicy finds the first rule of an Indexed Job's successPolicy that its
// succeeded indexes meet, and says which in Kubernetes' words ("Matched rules at index 0").
// A rule with succeededIndexes needs all of them to succeed, or succeededCount of them; a
// rule with only succeededCount needs that many indexes, whichever.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, completed map[int]bool) (string, bool) {
	if policy == nil || len(completed) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		matched := false
		if rule.SucceededIndexes != nil {
			required := parseIndexes(*rule.SucceededIndexes, completions)
			if len(required) == 0 {
				continue // unreadable, as validation lets no such rule in
			}
			done := 0
			for index := range required {
				if completed[index] {
					done++
				}
			}
			matched = done == len(required) || (rule.SucceededCount != nil && done >= int(*rule.SucceededCount))
		} else if rule.SucceededCount != nil {
			matched = len(completed) >= int(*rule.SucceededCount)
		}
		if matched {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
