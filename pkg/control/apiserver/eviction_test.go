package apiserver

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func eviction(name string) *policyv1.Eviction {
	return &policyv1.Eviction{TypeMeta: metav1.TypeMeta{Kind: "Eviction", APIVersion: "policy/v1"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
}

// runningPod stores a pod bound to a node, Running and Ready (or not).
func runningPod(t *testing.T, h http.Handler, name string, ready bool) {
	t.Helper()
	pod := podNamed(name, "web")
	pod.Spec.NodeName = "node-1"
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", pod); w.Code != http.StatusCreated {
		t.Fatalf("create %s: %d %s", name, w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/"+name, nil).Body.Bytes(), pod)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if w := do(t, h, "PUT", "/api/v1/namespaces/default/pods/"+name+"/status", pod); w.Code != http.StatusOK {
		t.Fatalf("status of %s: %d %s", name, w.Code, w.Body)
	}
}

func podState(t *testing.T, h http.Handler, name string) (exists, deleting bool) {
	t.Helper()
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/"+name, nil)
	if w.Code == http.StatusNotFound {
		return false, false
	}
	var pod corev1.Pod
	apitest.DecodeStrict(t, w.Body.Bytes(), &pod)
	return true, pod.DeletionTimestamp != nil
}

func budgetStatus(t *testing.T, h http.Handler) policyv1.PodDisruptionBudgetStatus {
	t.Helper()
	var pdb policyv1.PodDisruptionBudget
	apitest.DecodeStrict(t, do(t, h, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web", nil).Body.Bytes(), &pdb)
	return pdb.Status
}

// Evictions delete pods as kubectl drain needs: freely without a budget, and with one only
// while it allows a disruption, which each eviction spends; refusals are 429 naming the
// budget. Pending pods, and with IfHealthyBudget unready pods of a healthy budget, go freely.
func TestEviction(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	evict := func(name, query string) (int, string) {
		w := do(t, h, "POST", "/api/v1/namespaces/default/pods/"+name+"/eviction"+query, eviction(name))
		return w.Code, w.Body.String()
	}

	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods/a/eviction", eviction("b")); w.Code != http.StatusBadRequest {
		t.Errorf("eviction naming another pod: %d %s", w.Code, w.Body)
	}
	if code, body := evict("missing", ""); code != http.StatusNotFound {
		t.Errorf("eviction of a missing pod: %d %s", code, body)
	}
	runningPod(t, h, "free", true)
	if code, body := evict("free", ""); code != http.StatusCreated {
		t.Fatalf("eviction without a budget: %d %s", code, body)
	}
	if _, deleting := podState(t, h, "free"); !deleting {
		t.Error("an evicted running pod is not being deleted gracefully")
	}
	// It was told why, as kube-apiserver's eviction does (a Job's podFailurePolicy reads it).
	var evicted corev1.Pod
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/free", nil).Body.Bytes(), &evicted)
	if i := slices.IndexFunc(evicted.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget }); i < 0 ||
		evicted.Status.Conditions[i].Status != corev1.ConditionTrue || evicted.Status.Conditions[i].Reason != "EvictionByEvictionAPI" ||
		evicted.Status.Conditions[i].Message != "Eviction API: evicting" {
		t.Errorf("evicted pod's conditions %+v, want DisruptionTarget EvictionByEvictionAPI", evicted.Status.Conditions)
	}

	// An older client's policy/v1beta1 Eviction is accepted, as kube's EvictionREST accepts it;
	// another version is not.
	runningPod(t, h, "old-client", true)
	beta := eviction("old-client")
	beta.APIVersion = "policy/v1beta1"
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods/old-client/eviction", beta); w.Code != http.StatusCreated {
		t.Errorf("policy/v1beta1 eviction: %d %s", w.Code, w.Body)
	}
	beta.APIVersion = "policy/v2"
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods/old-client/eviction", beta); w.Code != http.StatusBadRequest {
		t.Errorf("policy/v2 eviction: %d %s, want 400", w.Code, w.Body)
	}

	min := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if w := do(t, h, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb); w.Code != http.StatusCreated {
		t.Fatalf("create budget: %d %s", w.Code, w.Body)
	}
	runningPod(t, h, "web-1", true)
	runningPod(t, h, "web-2", true)
	if code, body := evict("web-1", ""); code != http.StatusTooManyRequests || !strings.Contains(body, "still being processed") || !strings.Contains(body, string(policyv1.DisruptionBudgetCause)) {
		t.Fatalf("eviction under a budget no controller has processed: %d %s", code, body)
	}

	// What the disruption controller would write: 2 healthy, 1 needed, 1 disruption allowed.
	apitest.DecodeStrict(t, do(t, h, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web", nil).Body.Bytes(), pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}
	if w := do(t, h, "PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web/status", pdb); w.Code != http.StatusOK {
		t.Fatalf("budget status: %d %s", w.Code, w.Body)
	}
	if code, body := evict("web-1", "?dryRun=All"); code != http.StatusCreated {
		t.Fatalf("dry-run eviction: %d %s", code, body)
	}
	if _, deleting := podState(t, h, "web-1"); deleting || budgetStatus(t, h).DisruptionsAllowed != 1 {
		t.Fatal("a dry-run eviction deleted the pod or spent the budget")
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/web-1", nil).Body.Bytes(), &evicted)
	if slices.ContainsFunc(evicted.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget }) {
		t.Error("a dry-run eviction marked the pod")
	}
	if code, body := evict("web-1", ""); code != http.StatusCreated {
		t.Fatalf("eviction the budget allows: %d %s", code, body)
	}
	st := budgetStatus(t, h)
	if _, deleting := podState(t, h, "web-1"); !deleting || st.DisruptionsAllowed != 0 || st.DisruptedPods["web-1"].Time.IsZero() {
		t.Fatalf("after an allowed eviction: pod deleting %v, budget %+v", deleting, st)
	}
	// The status still says 2 healthy (no controller here): more than needed, so kube's
	// wording is the general one (TestEvictionRefusals has each).
	if code, body := evict("web-2", ""); code != http.StatusTooManyRequests || !strings.Contains(body, "The disruption budget web does not allow evicting pods currently") {
		t.Fatalf("eviction beyond the budget: %d %s", code, body)
	}
	if _, deleting := podState(t, h, "web-2"); deleting {
		t.Fatal("a refused eviction deleted the pod")
	}

	runningPod(t, h, "web-unready", false) // the budget is healthy: an unready pod goes free
	if code, body := evict("web-unready", ""); code != http.StatusCreated || budgetStatus(t, h).DisruptionsAllowed != 0 {
		t.Fatalf("eviction of an unready pod under a healthy budget: %d %s", code, body)
	}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", podNamed("web-pending", "web")); w.Code != http.StatusCreated {
		t.Fatalf("create pending pod: %d %s", w.Code, w.Body)
	}
	if code, body := evict("web-pending", ""); code != http.StatusCreated {
		t.Fatalf("eviction of a pending pod: %d %s", code, body)
	}
	if exists, _ := podState(t, h, "web-pending"); exists {
		t.Fatal("an evicted pending pod still exists")
	}
}

// A refused eviction says why in kube-apiserver's words (its checkAndDecrement), which
// kubectl drain prints: the budget's failed sync, its healthy count, its condition; a
// budget the controller has not processed asks to retry after 10 s; a negative allowance
// cannot be written; two budgets are a 500 with kube's own message.
func TestEvictionRefusals(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	runningPod(t, h, "web-1", true)
	min := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if w := do(t, h, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb); w.Code != http.StatusCreated {
		t.Fatalf("create budget: %d %s", w.Code, w.Body)
	}
	w := do(t, h, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "10" {
		t.Errorf("eviction under an unprocessed budget: %d Retry-After %q %s, want 429 and 10", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	refusal := func(status policyv1.PodDisruptionBudgetStatus) (int, metav1.Status) {
		t.Helper()
		apitest.DecodeStrict(t, do(t, h, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web", nil).Body.Bytes(), pdb)
		status.ObservedGeneration = pdb.Generation
		pdb.Status = status
		if w := do(t, h, "PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web/status", pdb); w.Code != http.StatusOK {
			t.Fatalf("budget status: %d %s", w.Code, w.Body)
		}
		w := do(t, h, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))
		st := apitest.ResponseStatus(t, w.Body.Bytes())
		return w.Code, st
	}
	condition := func(reason, message string) []metav1.Condition {
		return []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}}
	}
	for _, tc := range []struct {
		status policyv1.PodDisruptionBudgetStatus
		want   string
	}{
		{policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 1, Conditions: condition(policyv1.SyncFailedReason, `found no controllers for pod "web-1"`)},
			`The disruption budget web does not allow evicting pods currently because it failed sync: found no controllers for pod "web-1"`},
		{policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, Conditions: condition(policyv1.InsufficientPodsReason, "")},
			"The disruption budget web needs 1 healthy pods and has 1 currently"},
		{policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 1, Conditions: condition(policyv1.InsufficientPodsReason, "one pod disrupted")},
			"The disruption budget web does not allow evicting pods currently (InsufficientPods): one pod disrupted"},
		{policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 1},
			"The disruption budget web does not allow evicting pods currently"},
	} {
		code, st := refusal(tc.status)
		if code != http.StatusTooManyRequests || st.Message != "Cannot evict pod as it would violate the pod's disruption budget." ||
			st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != tc.want {
			t.Errorf("status %+v: %d %+v, want 429 with the cause %q", tc.status, code, st, tc.want)
		}
	}
	// A negative allowance cannot be written, as kube's status validation refuses it (the
	// eviction's check of one stays for budgets stored before).
	apitest.DecodeStrict(t, do(t, h, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web", nil).Body.Bytes(), pdb)
	pdb.Status.DisruptionsAllowed = -1
	if w := do(t, h, "PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web/status", pdb); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("negative allowance written: %d %s, want 422", w.Code, w.Body)
	}

	pdb.ObjectMeta = metav1.ObjectMeta{Name: "web-too"}
	if w := do(t, h, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb); w.Code != http.StatusCreated {
		t.Fatalf("create second budget: %d %s", w.Code, w.Body)
	}
	w = do(t, h, "POST", "/api/v1/namespaces/default/pods/web-1/eviction", eviction("web-1"))
	st := apitest.ResponseStatus(t, w.Body.Bytes())
	if w.Code != http.StatusInternalServerError || st.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Errorf("eviction under two budgets: %d %s", w.Code, w.Body)
	}
	if exists, deleting := podState(t, h, "web-1"); !exists || deleting {
		t.Error("a refused eviction deleted the pod")
	}
}

// kubectl drain finds the eviction subresource and its group/version in discovery; a
// subresource miniapi does not serve is kube's 404 for a route it lacks, not "pod not found".
func TestEvictionDiscoveryAndUnservedSubresources(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	var list metav1.APIResourceList
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1", nil).Body.Bytes(), &list)
	found := false
	for _, r := range list.APIResources {
		if r.Name == "pods/eviction" {
			found = r.Group == "policy" && r.Version == "v1" && r.Kind == "Eviction" && len(r.Verbs) == 1 && r.Verbs[0] == "create"
		}
	}
	if !found {
		t.Errorf("/api/v1 has no pods/eviction of policy/v1 Eviction: %+v", list.APIResources)
	}
	runningPod(t, h, "a", true)
	w := do(t, h, "GET", "/api/v1/namespaces/default/pods/a/unknown", nil)
	if w.Code != http.StatusNotFound || apitest.ResponseStatus(t, w.Body.Bytes()).Message != "the server could not find the requested resource" {
		t.Errorf("GET pods/a/unknown: %d %s", w.Code, w.Body)
	}
	// kubectl tells a missing subresource from a missing pod by details with no name
	// (kubectl debug dereferenced them: without details it panicked).
	st := apitest.ResponseStatus(t, w.Body.Bytes())
	if st.Details == nil || st.Details.Name != "" {
		t.Errorf("the 404 of an unserved subresource has details %+v, want present and nameless", st.Details)
	}
	// A subresource serves its own verbs: DELETE or POST of pods/a/status must not reach
	// the pod's own delete and create.
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/v1/namespaces/default/pods/a/status"},
		{"DELETE", "/api/v1/namespaces/default/pods/a/ephemeralcontainers"},
		{"POST", "/api/v1/namespaces/default/pods/z/ephemeralcontainers"},
		{"GET", "/api/v1/namespaces/default/pods/a/binding"},
		// kube-apiserver routes POST to a collection, PUT and PATCH to an object only
		{"POST", "/api/v1/namespaces/default/pods/z"},
		{"PUT", "/api/v1/namespaces/default/pods"},
		{"PATCH", "/api/v1/namespaces/default/pods"},
	} {
		body := podNamed("z", "z")
		w := do(t, h, c.method, c.path, body)
		if w.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d %s, want 405", c.method, c.path, w.Code, w.Body)
			continue
		}
		// kube-apiserver v1.36.3's answer for a method its route lacks
		if st := apitest.ResponseStatus(t, w.Body.Bytes()); st.Message != "the server does not allow this method on the requested resource" || st.Reason != metav1.StatusReasonMethodNotAllowed {
			t.Errorf("%s %s: status %+v, want kube's 405", c.method, c.path, st)
		}
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "deletionTimestamp") {
		t.Errorf("pod a after the refused deletes: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, "GET", "/api/v1/namespaces/default/pods/z", nil); w.Code != http.StatusNotFound {
		t.Errorf("pod z after the refused create: %d", w.Code)
	}
}
