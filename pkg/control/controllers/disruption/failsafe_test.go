package disruption

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestFailedStatusWriteFailsSafe: as kube's sync and failSafe, when writing the computed
// status fails (other than by a conflict) the budget is written again from what was
// stored, allowing no disruption, with a SyncFailed condition saying why.
func TestFailedStatusWriteFailsSafe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		writeErr error
		want     string // the stored status after the sync
	}{
		{"server error", apierrors.NewInternalError(errors.New("etcd down")),
			`allowed=0 gen=1 False/SyncFailed "Internal error occurred: etcd down" condition-gen=1`},
		{"conflict", apierrors.NewConflict(policyv1.Resource("poddisruptionbudgets"), "budget", errors.New("stale")),
			`allowed=5 gen=1 True/SufficientPods "" condition-gen=1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zero := intstr.FromInt32(0)
			pdb := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "budget", Generation: 2},
				Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}},
				Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 5, Conditions: []metav1.Condition{{
					Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, ObservedGeneration: 1}}},
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "x"}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
			client := fake.NewClientset(pdb, pod)
			writes := 0
			client.PrependReactor("update", "poddisruptionbudgets", func(action k8stesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "status" {
					return false, nil, nil
				}
				writes++
				if writes == 1 {
					return true, nil, tc.writeErr
				}
				return false, nil, nil
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, factory, nil, nil, record.NewFakeRecorder(100), clocktesting.NewFakeClock(pod.CreationTimestamp.Time), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			ctx := controllertest.StartInformers(t, factory)
			_, _ = c.sync(ctx, "ns/budget")
			got, err := client.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "budget", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
			summary := fmt.Sprintf("allowed=%d gen=%d %s/%s %q condition-gen=%d", got.Status.DisruptionsAllowed, got.Status.ObservedGeneration,
				cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration)
			if summary != tc.want {
				t.Errorf("status %s, want %s", summary, tc.want)
			}
		})
	}
}

// TestUnconvertibleSelectorFailsSafe: as kube's getPodsForPdb, a selector that does not
// convert (one stored before validation) fails the sync rather than matching no pods, so
// the budget allows no disruption with a SyncFailed condition and a NoPods warning.
func TestUnconvertibleSelectorFailsSafe(t *testing.T) {
	maxOne := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "budget", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &maxOne, Selector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}},
	}
	client := fake.NewClientset(pdb)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	c, err := New(client, factory, nil, nil, recorder, clocktesting.NewFakeClock(pdb.CreationTimestamp.Time), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := controllertest.StartInformers(t, factory)
	if _, err := c.sync(ctx, "ns/budget"); err != nil {
		t.Fatal(err)
	}
	got, err := client.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "budget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1.SyncFailedReason || got.Status.DisruptionsAllowed != 0 {
		t.Fatalf("status %+v, want disruptionsAllowed 0 and a SyncFailed condition", got.Status)
	}
	const want = "Warning NoPods Failed to get pods: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
	if event := <-recorder.Events; event != want {
		t.Errorf("event %q, want %q", event, want)
	}
}
