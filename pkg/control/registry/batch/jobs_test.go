package batch

import (
	"slices"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func job() *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: registrytest.ObjMeta("pi"), Spec: batchv1.JobSpec{Template: registrytest.Template(map[string]string{"run": "pi"})}}
	j.UID = "0a1b"
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	return j
}

func TestJobDefaultsAndGeneratedSelector(t *testing.T) {
	j := job()
	if errs := registrytest.CreateSteps(JobRules, j); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion || *s.Suspend ||
		s.ManualSelector == nil || *s.ManualSelector { // SetDefaults_Job sets manualSelector: false

		t.Errorf("job spec not defaulted: %+v", s)
	}
	if s.Selector.MatchLabels[batchv1.ControllerUidLabel] != "0a1b" || len(s.Selector.MatchLabels) != 1 {
		t.Errorf("generated selector: %v", s.Selector.MatchLabels)
	}
	for k, v := range map[string]string{"controller-uid": "0a1b", batchv1.ControllerUidLabel: "0a1b", "job-name": "pi", batchv1.JobNameLabel: "pi", "run": "pi"} {
		if s.Template.Labels[k] != v || j.Labels[k] != v {
			t.Errorf("label %s: template %q, job %q, want %q", k, s.Template.Labels[k], j.Labels[k], v)
		}
	}
	if jobCompletions(j) != "0/1" || jobStatusText(j) != "Running" {
		t.Errorf("columns: %q %q", jobCompletions(j), jobStatusText(j))
	}
}

// A pod failure policy's condition pattern without a status matches the condition being
// True, as kube's SetDefaults_PodFailurePolicyOnPodConditionsPattern: a Job's and a
// CronJob's template's (kube-apiserver v1.36.3 takes both).
func TestPodConditionPatternStatusDefaultsToTrue(t *testing.T) {
	policy := func() *batchv1.PodFailurePolicy {
		return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}
	}
	j := job()
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	j.Spec.PodFailurePolicy = policy()
	registrytest.ExpectMessages(t, "job", registrytest.CreateSteps(JobRules, j))
	if got := j.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status; got != corev1.ConditionTrue {
		t.Errorf("job's pattern status %q, want True", got)
	}
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{PodFailurePolicy: policy()}}}}
	CronJobRules.Default(cj)
	if got := cj.Spec.JobTemplate.Spec.PodFailurePolicy.Rules[0].OnPodConditions[0].Status; got != corev1.ConditionTrue {
		t.Errorf("cron job's pattern status %q, want True", got)
	}
}

func TestJobValidation(t *testing.T) {
	j := job()
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	j.Spec.Parallelism = registry.Int32Ptr(-2)
	errs := registrytest.CreateSteps(JobRules, j)
	registrytest.ExpectErrors(t, "job", errs, "spec.template.spec.restartPolicy: FieldValueRequired", "spec.parallelism: FieldValueInvalid")

	j = job()
	manual := true
	j.Spec.ManualSelector = &manual
	j.Spec.Parallelism = registry.Int32Ptr(-1)
	// kube-apiserver v1.36.3's answer, in its order (ValidateJob: the spec, then its selector).
	registrytest.ExpectMessages(t, "manual selector left out", registrytest.CreateSteps(JobRules, j),
		"spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
		"spec.selector: Required value",
		"spec.template.metadata.labels: Invalid value: {\"run\":\"pi\"}: `selector` does not match template `labels`")

	old := job()
	if errs := registrytest.CreateSteps(JobRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	changed := old.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	errs = registrytest.UpdateSteps(JobRules, changed, old)
	registrytest.ExpectErrors(t, "new template", errs, "spec.template: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.template", "field is immutable")
	changed.Spec.Completions = ptr.To[int32](3) // kube names completions before the template
	registrytest.ExpectErrorsInOrder(t, "new completions and template", registrytest.UpdateSteps(JobRules, changed, old),
		"spec.completions: FieldValueInvalid", "spec.template: FieldValueInvalid")

	changed = old.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	labels := `{"batch.kubernetes.io/controller-uid":"0a1b","batch.kubernetes.io/job-name":"pi","controller-uid":"0a1b","job-name":"pi","run":"pi"}`
	registrytest.ExpectMessages(t, "new selector", registrytest.UpdateSteps(JobRules, changed, old),
		"spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` not auto-generated",
		"spec.template.metadata.labels: Invalid value: "+labels+": `selector` does not match template `labels`",
		"spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: field is immutable")
}

// As Kubernetes 1.36: a suspended Job that has not started may change its pods' scheduling
// directives and resources, nothing else of its template; a Job that runs, none of it. An
// Indexed Job scales completions with parallelism; podFailurePolicy never changes.
func TestJobUpdateValidation(t *testing.T) {
	created := func(change func(*batchv1.Job)) *batchv1.Job {
		j := job()
		change(j)
		if errs := registrytest.CreateSteps(JobRules, j); len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		return j
	}
	suspended := created(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	scheduling := func(j *batchv1.Job) {
		s := &j.Spec.Template.Spec
		s.NodeSelector = map[string]string{"disk": "ssd"}
		s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
		s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
		s.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
		j.Spec.Template.Annotations = map[string]string{"note": "moved"}
	}
	changed := suspended.DeepCopy()
	scheduling(changed)
	registrytest.ExpectErrors(t, "suspended, not started: scheduling and resources", registrytest.UpdateSteps(JobRules, changed, suspended))

	changed.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	errs := registrytest.UpdateSteps(JobRules, changed, suspended)
	registrytest.ExpectErrors(t, "suspended, not started: image", errs, "spec.template.spec: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.template.spec", "field is immutable")

	started := suspended.DeepCopy()
	started.Status.StartTime, started.Status.Active = &metav1.Time{Time: time.Now()}, 0
	changed = started.DeepCopy()
	scheduling(changed)
	registrytest.ExpectErrors(t, "suspended after it started, not yet Suspended", registrytest.UpdateSteps(JobRules, changed, started), "spec.template: FieldValueInvalid")
	started.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}}
	registrytest.ExpectErrors(t, "Suspended condition", registrytest.UpdateSteps(JobRules, changed.DeepCopy(), started))
	started.Status.Active = 1
	registrytest.ExpectErrors(t, "Suspended with an active pod", registrytest.UpdateSteps(JobRules, changed.DeepCopy(), started), "spec.template: FieldValueInvalid")

	running := created(func(*batchv1.Job) {})
	changed = running.DeepCopy()
	scheduling(changed)
	registrytest.ExpectErrors(t, "running", registrytest.UpdateSteps(JobRules, changed, running), "spec.template: FieldValueInvalid")

	indexed := created(func(j *batchv1.Job) {
		j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = ptr.To(batchv1.IndexedCompletion), registry.Int32Ptr(3), registry.Int32Ptr(3)
	})
	changed = indexed.DeepCopy()
	changed.Spec.Completions, changed.Spec.Parallelism = registry.Int32Ptr(5), registry.Int32Ptr(5)
	registrytest.ExpectErrors(t, "indexed, in tandem", registrytest.UpdateSteps(JobRules, changed, indexed))
	changed.Spec.Parallelism = registry.Int32Ptr(4)
	errs = registrytest.UpdateSteps(JobRules, changed, indexed)
	registrytest.ExpectErrors(t, "indexed, alone", errs, "spec.completions: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.completions", "can only be modified in tandem with spec.parallelism")
	changed = running.DeepCopy()
	changed.Spec.Completions, changed.Spec.Parallelism = registry.Int32Ptr(2), registry.Int32Ptr(2)
	registrytest.ExpectErrors(t, "NonIndexed", registrytest.UpdateSteps(JobRules, changed, running), "spec.completions: FieldValueInvalid")

	changed = running.DeepCopy()
	changed.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
	changed.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	registrytest.ExpectErrors(t, "podFailurePolicy", registrytest.UpdateSteps(JobRules, changed, running), "spec.podFailurePolicy: FieldValueInvalid")
}

// The per-index and success policies need an Indexed Job, FailIndex needs
// backoffLimitPerIndex, as kube-apiserver says.
func TestJobPolicyValidation(t *testing.T) {
	indexed := func(change func(*batchv1.JobSpec)) *batchv1.Job {
		j := job()
		j.Spec.CompletionMode, j.Spec.Completions = ptr.To(batchv1.IndexedCompletion), registry.Int32Ptr(3)
		change(&j.Spec)
		return j
	}
	ok := indexed(func(s *batchv1.JobSpec) {
		s.BackoffLimitPerIndex, s.MaxFailedIndexes, s.ManagedBy = registry.Int32Ptr(1), registry.Int32Ptr(2), ptr.To("example.com/batch")
		s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
		s.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2"), SucceededCount: registry.Int32Ptr(1)}, {SucceededCount: registry.Int32Ptr(3)}}}
	})
	if errs := registrytest.CreateSteps(JobRules, ok); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if *ok.Spec.BackoffLimit != 1<<31-1 {
		t.Errorf("backoffLimit with backoffLimitPerIndex defaulted to %d", *ok.Spec.BackoffLimit)
	}
	for name, tc := range map[string]struct {
		job  *batchv1.Job
		want []string
	}{
		"per index, NonIndexed": {func() *batchv1.Job {
			j := job()
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = registry.Int32Ptr(1), registry.Int32Ptr(0)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: registry.Int32Ptr(1)}}}
			return j
		}(), []string{"spec.backoffLimitPerIndex: FieldValueInvalid", "spec.maxFailedIndexes: FieldValueInvalid", "spec.successPolicy: FieldValueInvalid"}},
		"maxFailedIndexes alone, above completions": {indexed(func(s *batchv1.JobSpec) { s.MaxFailedIndexes = registry.Int32Ptr(4) }),
			[]string{"spec.backoffLimitPerIndex: FieldValueRequired", "spec.maxFailedIndexes: FieldValueInvalid"}},
		"FailIndex without backoffLimitPerIndex": {indexed(func(s *batchv1.JobSpec) {
			s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
		}), []string{"spec.podFailurePolicy.rules[0].action: FieldValueInvalid"}},
		"podFailurePolicy replacing terminating pods": {func() *batchv1.Job {
			j := job()
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
			return j
		}(), []string{"spec.podReplacementPolicy: FieldValueNotSupported"}},
		"unknown podReplacementPolicy": {func() *batchv1.Job {
			j := job()
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.PodReplacementPolicy("Never"))
			return j
		}(), []string{"spec.podReplacementPolicy: FieldValueNotSupported"}},
		"bad managedBy": {indexed(func(s *batchv1.JobSpec) { s.ManagedBy = ptr.To("no-domain") }), []string{"spec.managedBy: FieldValueInvalid"}},
		"bad success rules": {indexed(func(s *batchv1.JobSpec) {
			s.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{}, {SucceededIndexes: ptr.To("2,1")}, {SucceededIndexes: ptr.To("0-3")}, {SucceededIndexes: ptr.To("1"), SucceededCount: registry.Int32Ptr(2)}}}
		}), []string{"spec.successPolicy.rules[0]: FieldValueRequired", "spec.successPolicy.rules[1].succeededIndexes: FieldValueInvalid",
			"spec.successPolicy.rules[2].succeededIndexes: FieldValueInvalid", "spec.successPolicy.rules[3].succeededCount: FieldValueInvalid"}},
	} {
		registrytest.ExpectErrors(t, name, registrytest.CreateSteps(JobRules, tc.job), tc.want...)
	}
	changed := ok.DeepCopy()
	changed.Spec.SuccessPolicy, changed.Spec.ManagedBy, changed.Spec.BackoffLimitPerIndex = nil, nil, registry.Int32Ptr(2)
	registrytest.ExpectErrors(t, "policies changed", registrytest.UpdateSteps(JobRules, changed, ok),
		"spec.successPolicy: FieldValueInvalid", "spec.managedBy: FieldValueInvalid", "spec.backoffLimitPerIndex: FieldValueInvalid")
}

func TestJobColumns(t *testing.T) {
	j := job()
	start := metav1.NewTime(time.Now().Add(-90 * time.Second))
	end := metav1.NewTime(start.Add(30 * time.Second))
	j.Spec.Completions = registry.Int32Ptr(3)
	j.Status = batchv1.JobStatus{Succeeded: 3, StartTime: &start, CompletionTime: &end,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}
	if jobStatusText(j) != "Complete" || jobCompletions(j) != "3/3" || jobDuration(j) != "30s" {
		t.Errorf("columns: %q %q %q", jobStatusText(j), jobCompletions(j), jobDuration(j))
	}
	// between a success policy being met and the last pods going, as kube's printer
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}}
	if jobStatusText(j) != "SuccessCriteriaMet" {
		t.Errorf("status with SuccessCriteriaMet: %q", jobStatusText(j))
	}
	j.Spec.Completions, j.Spec.Parallelism = nil, registry.Int32Ptr(4)
	if jobCompletions(j) != "3/1 of 4" {
		t.Errorf("work queue completions: %q", jobCompletions(j))
	}
}

func TestCronJobRules(t *testing.T) {
	c := &batchv1.CronJob{ObjectMeta: registrytest.ObjMeta("nightly"), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *"}}
	c.Spec.JobTemplate.Spec.Template = registrytest.Template(nil)
	c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	if errs := registrytest.CreateSteps(CronJobRules, c); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if c.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *c.Spec.SuccessfulJobsHistoryLimit != 3 || *c.Spec.FailedJobsHistoryLimit != 1 || *c.Spec.Suspend {
		t.Errorf("cronjob not defaulted: %+v", c.Spec)
	}
	tz := "Mars/Olympus"
	c.Spec.Schedule, c.Spec.TimeZone = "every day", &tz
	c.Name = "a-name-that-is-longer-than-fifty-two-characters-for-sure"
	registrytest.ExpectErrors(t, "bad cronjob", CronJobRules.Validate(c),
		"spec.schedule: FieldValueInvalid", "spec.timeZone: FieldValueInvalid", "metadata.name: FieldValueInvalid")
}

// The warnings kube-apiserver v1.36 sends for jobs and cron jobs (WarningsForJobSpec and
// the cron job strategy's), in its order.
func TestJobWarningsAsKubernetes(t *testing.T) {
	j := job()
	j.Name = "pw.job"
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](100_001), ptr.To[int32](10_001)
	j.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{}}
	want := []string{
		"metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]",
		"spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail",
		`spec.template.spec.imagePullSecrets[0].name: invalid empty name ""`,
	}
	if got := JobRules.Warnings(j, nil); !slices.Equal(got, want) {
		t.Errorf("job warnings\n%q\nwant\n%q", got, want)
	}

	c := cronJob()
	c.Spec.Schedule = "CRON_TZ=UTC 0 3 * * *"
	c.Spec.JobTemplate.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{}}
	want = []string{
		`spec.jobTemplate.spec.template.spec.imagePullSecrets[0].name: invalid empty name ""`,
		"cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
	}
	if got := CronJobRules.Warnings(c, nil); !slices.Equal(got, want) {
		t.Errorf("cron job warnings\n%q\nwant\n%q", got, want)
	}
}
