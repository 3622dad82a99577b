package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

var disruptionBudgets = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// serveEviction deletes a pod the way `kubectl drain` asks for it (POST pods/NAME/eviction):
// only if the pod's PodDisruptionBudget allows one more disruption, which it then spends, as
// Kubernetes' eviction subresource does. A pod that is not running (pending, finished, or
// already being deleted) is not protected by a budget.
func (s *Server) serveEviction(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	var ev policyv1.Eviction
	if _, err := decodeBody(r, &ev, policyv1.SchemeGroupVersion.WithKind("Eviction"), validationIgnore); err != nil {
		writeError(w, err)
		return
	}
	if ev.Name != info.Name || (ev.Namespace != "" && ev.Namespace != info.Namespace) {
		writeError(w, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	opts := metav1.DeleteOptions{}
	if ev.DeleteOptions != nil {
		opts = *ev.DeleteOptions
	}
	dry, err := dryRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if err := s.evict(r.Context(), res, info.Namespace, info.Name, opts); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func (s *Server) evict(ctx context.Context, pods *registry.Resource, ns, name string, opts metav1.DeleteOptions) error {
	obj, _, err := s.current(ctx, pods, name, objectKey(pods, ns, name))
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	if err := checkPreconditions(pods, pod, opts.Preconditions); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodPending && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		if err := s.spendDisruption(ctx, pod, len(opts.DryRun) > 0); err != nil {
			return err
		}
	}
	_, err = s.delete(ctx, pods, ns, name, opts)
	return err
}

// spendDisruption takes one allowed disruption from the budget covering pod, or refuses with
// 429 (kubectl drain retries) when there is none, or when the disruption controller has not
// yet computed the budget's status for its current spec.
func (s *Server) spendDisruption(ctx context.Context, pod *corev1.Pod, dry bool) error {
	budgets, ok := s.reg.Lookup(disruptionBudgets)
	if !ok {
		return nil
	}
	kvs, _, err := s.store.List(ctx, listPrefix(budgets, pod.Namespace))
	if err != nil {
		return err
	}
	var covering []*policyv1.PodDisruptionBudget
	for _, kv := range kvs {
		obj, err := sharedObject(budgets, kv.Memo, kv.Value, kv.Revision).Object()
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
	case len(covering) > 1:
		return apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support"))
	}
	errNotSpent := errors.New("a pod that is not ready goes without spending a disruption")
	_, err = s.update(ctx, budgets, pod.Namespace, covering[0].Name, updateOptions{subresource: "status", dryRun: dry}, func(cur runtime.Object) (runtime.Object, error) {
		pdb := cur.(*policyv1.PodDisruptionBudget)
		pdb.ResourceVersion = "" // re-checked on whatever is current
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return nil, budgetViolation("The disruption budget %s is still being processed by the server.", pdb.Name)
		}
		if !podReady(pod) && unhealthyMayGo(pdb) {
			return nil, errNotSpent
		}
		if pdb.Status.DisruptionsAllowed <= 0 {
			return nil, budgetViolation("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[pod.Name] = metav1.Now()
		return pdb, nil
	})
	if err == errNotSpent {
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

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// budgetViolation is Kubernetes' refusal of an eviction: 429, with the budget named in a
// DisruptionBudget cause.
func budgetViolation(format string, args ...any) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf(format, args...)})
	return err
}
