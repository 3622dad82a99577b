package policy

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// ConditionDomainNames is the condition an AdminNetworkPolicy with domainNames egress peers
// gets, False: domainNames is an Extended (experimental) feature this enforcement does not
// implement (it needs a DNS proxy), so those peers match nothing, and the rules naming
// only them (Allow rules, the API says) allow nothing. Every node computes the same
// condition from the spec alone; the first to see it missing writes it.
const ConditionDomainNames = "DomainNamesSupported"

// domainNamesCondition is what anp's status should say of domainNames; nil: nothing (it
// has none).
func domainNamesCondition(anp *anpv1alpha1.AdminNetworkPolicy) *metav1.Condition {
	for _, r := range anp.Spec.Egress {
		for _, t := range r.To {
			if len(t.DomainNames) > 0 {
				return &metav1.Condition{Type: ConditionDomainNames, Status: metav1.ConditionFalse, Reason: "NotImplemented",
					ObservedGeneration: anp.Generation,
					Message:            "domainNames egress peers are not enforced on this cluster (no DNS proxy): they match nothing, so their rules allow nothing"}
			}
		}
	}
	return nil
}

// reportUnsupported puts ConditionDomainNames in (or takes it out of) the status of the
// AdminNetworkPolicies whose spec calls for it. tried holds the writes already tried
// (generation by UID and name): one failing (a node not allowed to write the status, a conflict
// with another node's write, whose result the informer then shows) is not tried again
// until the policy changes; a policy no longer in anps (all there are) is forgotten. It
// returns the errors of the writes it tried.
func reportUnsupported(ctx context.Context, client StatusWriter, anps []*anpv1alpha1.AdminNetworkPolicy, tried map[string]int64) []error {
	var errs []error
	there := make(map[string]bool, len(anps))
	for _, anp := range anps {
		there[string(anp.UID)+"/"+anp.Name] = true
	}
	maps.DeleteFunc(tried, func(key string, _ int64) bool { return !there[key] })
	for _, anp := range anps {
		want, have := domainNamesCondition(anp), meta.FindStatusCondition(anp.Status.Conditions, ConditionDomainNames)
		if want == nil && have == nil ||
			want != nil && have != nil && have.Status == want.Status && have.Reason == want.Reason && have.ObservedGeneration == want.ObservedGeneration {
			continue
		}
		key := string(anp.UID) + "/" + anp.Name
		if gen, ok := tried[key]; ok && gen == anp.Generation {
			continue
		}
		tried[key] = anp.Generation
		anp = anp.DeepCopy()
		if want == nil {
			meta.RemoveStatusCondition(&anp.Status.Conditions, ConditionDomainNames)
		} else {
			meta.SetStatusCondition(&anp.Status.Conditions, *want)
		}
		if _, err := client.UpdateStatus(ctx, anp, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("adminnetworkpolicy %s: status condition %s: %w", anp.Name, ConditionDomainNames, err))
		}
	}
	return errs
}
