package generic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	endpointsliceutil "k8s.io/endpointslice/util"
)

var disruptionBudgets = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// validateBinding is kube's ValidatePodBinding: the binding names a node.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// Bind assigns a pod to a node (pods/NAME/binding), what the scheduler does: only a pod
// that is not yet assigned, not being deleted, not gated, and whose uid matches the
// binding's. It is admitted as Kubernetes admits it: a CREATE of pods/binding whose object
// is the Binding. Then, as kube-apiserver's BindingREST, it is one read-modify-write of the
// stored pod that sets spec.nodeName, the binding's annotations and the PodScheduled
// condition: not an update of the pod, so no defaulting, no update validation, no
// metadata.generation bump and no managed fields (a third of a binding's cost was
// re-validating and comparing a pod nothing else had changed).
func (s *Store) Bind(ctx context.Context, pods *registry.Resource, ns, name string, b *corev1.Binding, dry bool) error {
	if errs := validateBinding(b); len(errs) > 0 {
		// kube's BindingREST returns the plain aggregate, which its handler answers with 500
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: errs.ToAggregate().Error()}}
	}
	if err := s.admitSubresourceCreate(ctx, pods, "binding", ns, name, b, dry); err != nil {
		return err
	}
	key := Key(pods, ns, name)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		cur, kv, err := s.current(ctx, pods, name, key)
		if err != nil {
			return err
		}
		pod := cur.(*corev1.Pod) // decoded afresh: ours to change
		if err := assignPod(pods, pod, b); err != nil {
			return err
		}
		data, err := encode(pods, pod)
		if err != nil || dry {
			return err
		}
		rev, err := s.store.Update(ctx, key, data, kv.Revision)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue // a concurrent write: check again on what is stored now
		}
		if err == nil {
			SetResourceVersion(pod, rev)
			s.wrote(ctx, pods, data, rev, pod)
		}
		return err
	}
	return apierrors.NewConflict(pods.GroupResource(), name, fmt.Errorf("too many concurrent writers, gave up after %d attempts", maxUpdateAttempts))
}

// assignPod sets the binding's node on pod, or says why the pod cannot take it (409s, as
// kube-apiserver's BindingREST: the binding's UID and resourceVersion are preconditions on
// the stored pod, the rest refusals of pods/binding).
func assignPod(pods *registry.Resource, pod *corev1.Pod, b *corev1.Binding) error {
	var pre metav1.Preconditions
	if b.UID != "" {
		pre.UID = &b.UID
	}
	if b.ResourceVersion != "" {
		pre.ResourceVersion = &b.ResourceVersion
	}
	if msg := preconditionFailure(pod, &pre); msg != "" { // checked by kube's store
		return storagePreconditionConflict(pods, pod.Name, Key(pods, pod.Namespace, pod.Name), msg)
	}
	refuse := func(format string, args ...any) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name, fmt.Errorf(format, args...))
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return refuse("pod %s is being deleted, cannot be assigned to a host", pod.Name)
	case pod.Spec.NodeName != "":
		return refuse("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName)
	case len(pod.Spec.SchedulingGates) != 0:
		return refuse("pod %s has non-empty .spec.schedulingGates", pod.Name)
	}
	pod.Spec.NodeName = b.Target.Name
	// The nomination hint is stale once bound: kube-apiserver clears it
	// (ClearingNominatedNodeNameAfterBinding, on by default since 1.35).
	pod.Status.NominatedNodeName = ""
	if len(b.Annotations) > 0 && pod.Annotations == nil {
		pod.Annotations = make(map[string]string, len(b.Annotations))
	}
	for k, v := range b.Annotations {
		pod.Annotations[k] = v
	}
	setPodScheduled(pod)
	return nil
}

func setPodScheduled(pod *corev1.Pod) {
	setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
}

// setPodCondition puts cond in place of the pod's condition of its type, or adds it.
func setPodCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	for i, c := range pod.Status.Conditions {
		if c.Type == cond.Type {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

// Evict deletes a pod the way `kubectl drain` asks for it (pods/NAME/eviction): only if the
// pod's PodDisruptionBudget allows one more disruption, which it then spends, as
// Kubernetes' eviction subresource does. A pod that is not running (pending, finished, or
// already being deleted) is not protected by a budget. It is admitted as a CREATE of
// pods/eviction whose object is the Eviction.
func (s *Store) Evict(ctx context.Context, pods *registry.Resource, ns, name string, ev *policyv1.Eviction, dry bool) error {
	opts := metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		opts = *ev.DeleteOptions
	}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if err := s.admitSubresourceCreate(ctx, pods, "eviction", ns, name, ev, dry); err != nil {
		return err
	}
	obj, err := s.Get(ctx, pods, ns, name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	if err := deletePreconditions(pods, pod, opts.Preconditions); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodPending && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		if err := s.spendDisruption(ctx, pod, len(opts.DryRun) > 0); err != nil {
			return err
		}
	}
	if !dry {
		if opts, err = s.markEvicted(ctx, pods, ns, name, opts); err != nil {
			return err
		}
	}
	_, _, err = s.delete(ctx, pods, ns, name, opts, false)
	return err
}

// markEvicted gives the pod the DisruptionTarget condition (EvictionByEvictionAPI) before
// it is deleted, as kube-apiserver's eviction does, so that a Job's podFailurePolicy can
// tell an eviction from a failure; a resourceVersion precondition moves to the version
// that write made.
func (s *Store) markEvicted(ctx context.Context, pods *registry.Resource, ns, name string, opts metav1.DeleteOptions) (metav1.DeleteOptions, error) {
	// Not admitted on its own: the eviction was (as kube-apiserver writes it from its store).
	updated, err := s.Update(ctx, pods, ns, name, UpdateOptions{Subresource: "status", admitted: true}, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if err := deletePreconditions(pods, pod, opts.Preconditions); err != nil {
			return nil, err
		}
		pod.ResourceVersion = "" // on whatever is current
		cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: metav1.Now()}
		if !slices.ContainsFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == cond.Type && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message
		}) { // an unchanged condition keeps its time
			setPodCondition(pod, cond)
		}
		return pod, nil
	})
	if err != nil {
		return opts, err
	}
	if p := opts.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != "" {
		rv := updated.(metav1.Object).GetResourceVersion()
		opts.Preconditions = &metav1.Preconditions{UID: p.UID, ResourceVersion: &rv}
	}
	return opts, nil
}

// admitSubresourceCreate runs the admission chain on a write that creates a subresource
// object (a Binding, an Eviction) of a pod.
func (s *Store) admitSubresourceCreate(ctx context.Context, pods *registry.Resource, sub, ns, name string, obj runtime.Object, dry bool) error {
	attrs := &Attributes{Operation: Create, Resource: pods, Subresource: sub, Namespace: ns, Name: name, Object: obj, DryRun: dry}
	if err := s.admission.admit(ctx, attrs); err != nil {
		return err
	}
	return s.admission.validate(ctx, attrs)
}

// spendDisruption takes one allowed disruption from the budget covering pod, or refuses with
// 429 (kubectl drain retries) when there is none, or when the disruption controller has not
// yet computed the budget's status for its current spec.
func (s *Store) spendDisruption(ctx context.Context, pod *corev1.Pod, dry bool) error {
	budgets, ok := s.reg.Lookup(disruptionBudgets)
	if !ok {
		return nil
	}
	kvs, _, err := s.store.List(ctx, ListPrefix(budgets, pod.Namespace))
	if err != nil {
		return err
	}
	var covering []*policyv1.PodDisruptionBudget
	for _, kv := range kvs {
		obj, err := Decode(budgets, kv.Value, kv.Revision)
		if err != nil {
			return err
		}
		pdb := obj.(*policyv1.PodDisruptionBudget)
		if pdb.Spec.Selector == nil { // selects nothing, as in Kubernetes
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("PodDisruptionBudget %s has an invalid selector: %w", pdb.Name, err))
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			covering = append(covering, pdb)
		}
	}
	switch {
	case len(covering) == 0:
		return nil
	case len(covering) > 1: // kube-apiserver's own Status: no reason, no "Internal error occurred"
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}
	}
	errNotSpent := errors.New("a pod that is not ready goes without spending a disruption")
	_, err = s.Update(ctx, budgets, pod.Namespace, covering[0].Name, UpdateOptions{Subresource: "status", DryRun: dry}, func(cur runtime.Object) (runtime.Object, error) {
		pdb := cur.(*policyv1.PodDisruptionBudget)
		pdb.ResourceVersion = "" // re-checked on whatever is current
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return nil, budgetViolation(10, fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
		}
		if !endpointsliceutil.IsPodReady(pod) && unhealthyMayGo(pdb) {
			return nil, errNotSpent
		}
		switch {
		case pdb.Status.DisruptionsAllowed < 0:
			return nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, errors.New("pdb disruptions allowed is negative"))
		case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
			return nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudget"), pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
		case pdb.Status.DisruptionsAllowed == 0:
			return nil, budgetViolation(0, whyNoDisruption(pdb))
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[pod.Name] = metav1.Now()
		return pdb, nil
	})
	if errors.Is(err, errNotSpent) {
		return nil
	}
	return err
}

// unhealthyMayGo says whether a budget lets a pod that is not ready be evicted without
// spending a disruption: always with AlwaysAllow; with IfHealthyBudget (the default) while
// the budget's healthy pods are enough.
func unhealthyMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.DesiredHealthy > 0 && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy
}

// maxDisruptedPods is how many evictions a budget may have that its controller has not
// yet seen go (kube-apiserver's MaxDisruptedPodSize).
const maxDisruptedPods = 2000

// whyNoDisruption says why a budget allows no disruption, as kube-apiserver's
// checkAndDecrement words it: a failed sync first (its counts are not to be trusted),
// then too few healthy pods, then the DisruptionAllowed condition.
func whyNoDisruption(pdb *policyv1.PodDisruptionBudget) string {
	cond := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	explained := cond != nil && cond.Status == metav1.ConditionFalse && cond.Message != ""
	switch {
	case explained && cond.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, cond.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case explained:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, cond.Reason, cond.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}

// budgetViolation is Kubernetes' refusal of an eviction: 429, with the budget named in a
// DisruptionBudget cause, and when to retry (a budget not yet processed: 10 s).
func budgetViolation(retryAfterSeconds int, why string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfterSeconds)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: why})
	return err
}
