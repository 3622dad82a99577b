package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIndexesRoundTrip(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", "0-4": "0-4", "0,1,2,4": "0-2,4", "3,1,7-8,x,9-z": "1,3,7,8", "0-1": "0,1", "5-12": "5-9"} {
		if got := formatIndexes(parseIndexes(in, 10)); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 6: 320 * time.Second, 7: 10 * time.Minute, 40: 10 * time.Minute} {
		if got := backoff(failures); got != want {
			t.Errorf("backoff(%d) = %v, want %v", failures, got, want)
		}
	}
}

func TestFailurePolicyNotIn(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionCount,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1, 2}}}}}
	pod := func(code int32) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "ok", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}}}
	}
	if a, _ := matchFailurePolicy(policy, pod(3)); a == nil || *a != batchv1.PodFailurePolicyActionCount {
		t.Errorf("exit 3 NotIn [1 2]: %v", a)
	}
	if a, _ := matchFailurePolicy(policy, pod(2)); a != nil {
		t.Errorf("exit 2 NotIn [1 2] matched %v (and exit code 0 must never match)", *a)
	}
}

// endedAt is a pod whose only container ended at second sec with exit code code.
func endedAt(sec int, code int32) *corev1.Pod {
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(time.Unix(int64(sec), 0))}}}}}}
}

// The consecutive failures count from the last success by finish time, not by the order
// the controller sees the pods in, and the back-off runs from the last failure's end.
func TestRecordFinished(t *testing.T) {
	for _, tc := range []struct {
		name              string
		before            int
		succeeded, failed []*corev1.Pod
		failures, lastSec int
	}{
		{name: "failures add up", before: 2, failed: []*corev1.Pod{endedAt(5, 1), endedAt(3, 1)}, failures: 4, lastSec: 5},
		{name: "a success resets", before: 2, succeeded: []*corev1.Pod{endedAt(5, 0)}},
		{name: "a failure after the success counts", before: 2, succeeded: []*corev1.Pod{endedAt(5, 0)}, failed: []*corev1.Pod{endedAt(4, 1), endedAt(7, 1)}, failures: 1, lastSec: 7},
	} {
		st := &jobState{failures: tc.before, lastFailure: time.Unix(1, 0)}
		st.recordFinished(tc.succeeded, tc.failed)
		want := time.Time{}
		if tc.lastSec > 0 {
			want = time.Unix(int64(tc.lastSec), 0)
		}
		if st.failures != tc.failures || !st.lastFailure.Equal(want) {
			t.Errorf("%s: failures %d last %v, want %d at %v", tc.name, st.failures, st.lastFailure, tc.failures, want)
		}
	}
	if left := backoffLeft(1, time.Unix(100, 0), time.Unix(103, 0)); left != 7*time.Second {
		t.Errorf("3s after the first failure %v of the back-off are left, want 7s", left)
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	rules := func(r ...batchv1.SuccessPolicyRule) *batchv1.SuccessPolicy { return &batchv1.SuccessPolicy{Rules: r} }
	for _, tc := range []struct {
		name      string
		policy    *batchv1.SuccessPolicy
		completed string
		want      string
	}{
		{name: "no policy", completed: "0-9"},
		{name: "indexes all done", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1,3-4")}), completed: "0-1,3-4", want: "Matched rules at index 0"},
		{name: "an index missing", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1,3-4")}), completed: "0-1,3"},
		{name: "count of the indexes", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), completed: "4,7-9", want: ""},
		{name: "count of the indexes met", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), completed: "3-4", want: "Matched rules at index 0"},
		{name: "count alone, second rule", policy: rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("9")}, batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](3)}), completed: "0,5,6", want: "Matched rules at index 1"},
		{name: "nothing succeeded", policy: rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](0)}), completed: ""},
	} {
		msg, met := matchSuccessPolicy(tc.policy, 10, parseIndexes(tc.completed, 10))
		if msg != tc.want || met != (tc.want != "") {
			t.Errorf("%s: %q %v, want %q", tc.name, msg, met, tc.want)
		}
	}
}

// A replacement carries the failures of its index: counted ones, or ignored ones when the
// podFailurePolicy says Ignore; the index fails once the counted ones reach the limit, or at
// once on FailIndex.
func TestIndexFailures(t *testing.T) {
	job := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimitPerIndex: ptr.To[int32](2), PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{7}}},
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{9}}},
	}}}}
	failedWith := func(code int32, counts map[string]string) *corev1.Pod {
		p := endedAt(1, code)
		p.Annotations = counts
		return p
	}
	for _, tc := range []struct {
		name            string
		replaced        *corev1.Pod
		failures, ignrd string
		failsIndex      bool
	}{
		{name: "first pod", failures: "0"},
		{name: "counted", replaced: failedWith(1, map[string]string{batchv1.JobIndexFailureCountAnnotation: "1"}), failures: "2", failsIndex: false},
		{name: "last retry", replaced: failedWith(1, map[string]string{batchv1.JobIndexFailureCountAnnotation: "2"}), failures: "3", failsIndex: true},
		{name: "ignored", replaced: failedWith(7, map[string]string{batchv1.JobIndexFailureCountAnnotation: "2", batchv1.JobIndexIgnoredFailureCountAnnotation: "4"}), failures: "2", ignrd: "5"},
		{name: "FailIndex", replaced: failedWith(9, nil), failures: "1", failsIndex: true},
		{name: "malformed count", replaced: failedWith(1, map[string]string{batchv1.JobIndexFailureCountAnnotation: "-3"}), failures: "1"},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		setIndexFailures(pod, job, tc.replaced)
		if pod.Annotations[batchv1.JobIndexFailureCountAnnotation] != tc.failures || pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != tc.ignrd {
			t.Errorf("%s: annotations %v, want failures %q ignored %q", tc.name, pod.Annotations, tc.failures, tc.ignrd)
		}
		if tc.replaced != nil && indexFailed(job, tc.replaced) != tc.failsIndex {
			t.Errorf("%s: indexFailed = %v", tc.name, !tc.failsIndex)
		}
	}
}

// TestNewPodFinalizers: the job-tracking finalizer is added after the template's own
// finalizers, once, even when the template already names it (kube's
// appendJobCompletionFinalizerIfNotFound).
func TestNewPodFinalizers(t *testing.T) {
	const tracking = batchv1.JobTrackingFinalizer
	for _, tc := range []struct{ template, want []string }{
		{nil, []string{tracking}},
		{[]string{"example.com/keep"}, []string{"example.com/keep", tracking}},
		{[]string{tracking, "example.com/keep"}, []string{tracking, "example.com/keep"}},
	} {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "u"}}
		job.Spec.Template.Finalizers = tc.template
		if got := newPod(job, -1).Finalizers; !slices.Equal(got, tc.want) {
			t.Errorf("template finalizers %v: pod finalizers %v, want %v", tc.template, got, tc.want)
		}
	}
}
