package batch

import (
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The rules of a Job's podFailurePolicy, its restart policy and deadline, checked with
// kube-apiserver's words (pkg/apis/batch/validation).
func TestPodFailurePolicyValidation(t *testing.T) {
	exitCodes := func(op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) *batchv1.PodFailurePolicyOnExitCodesRequirement {
		return &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}
	}
	disruption := []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	withRules := func(rules ...batchv1.PodFailurePolicyRule) *batchv1.Job {
		j := job()
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
		return j
	}
	many := make([]int32, 256)
	for i := range many {
		many[i] = int32(i + 1)
	}
	manyRules := make([]batchv1.PodFailurePolicyRule, 21)
	for i := range manyRules {
		manyRules[i] = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: disruption}
	}
	manyPatterns := slices.Repeat(disruption, 21)
	for name, tc := range map[string]struct {
		job  *batchv1.Job
		want []string
	}{
		"every action and operator": {withRules(
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To("c"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 2, 42}}},
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0, 1)},
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}, {Type: "example.com/Custom", Status: corev1.ConditionUnknown}}},
		), nil},
		"no action": {withRules(batchv1.PodFailurePolicyRule{OnPodConditions: disruption}),
			[]string{`spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`}},
		"unknown action": {withRules(batchv1.PodFailurePolicyRule{Action: "Retry", OnPodConditions: disruption}),
			[]string{`spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`}},
		"FailIndex without backoffLimitPerIndex": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailIndex, OnPodConditions: disruption}),
			[]string{`spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`}},
		"neither requirement": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore}),
			[]string{`spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required`}},
		"both requirements": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 1), OnPodConditions: disruption}),
			[]string{`spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported`}},
		"no operator": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes("", 1)}),
			[]string{`spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]`}},
		"unknown operator": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes("Has", 1)}),
			[]string{`spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "Has": supported values: "In", "NotIn"`}},
		"unknown container": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To("sidecar"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}),
			[]string{`spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "sidecar": must be one of the container or initContainer names in the pod template`}},
		"no values": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn)}),
			[]string{`spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: null: at least one value is required`}},
		"too many values": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, many...)}),
			[]string{`spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items`}},
		"0 with In, a duplicate, out of order": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: exitCodes(batchv1.PodFailurePolicyOnExitCodesOpIn, 0, 5, 3, 5)}),
			[]string{
				`spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator`,
				`spec.podFailurePolicy.rules[0].onExitCodes.values[3]: Duplicate value: 5`,
				`spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [0,5,3,5]: must be ordered`,
			}},
		// The first pattern's status defaults to True (TestPodConditionPatternStatusDefaultsToTrue).
		"condition patterns": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget}, {Type: corev1.DisruptionTarget, Status: "Maybe"}, {Type: "bad type", Status: corev1.ConditionTrue}}}),
			[]string{
				`spec.podFailurePolicy.rules[0].onPodConditions[1].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"`,
				`spec.podFailurePolicy.rules[0].onPodConditions[2].type: Invalid value: "bad type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			}},
		"too many patterns": {withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: manyPatterns}),
			[]string{`spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items`}},
		"too many rules": {withRules(manyRules...),
			[]string{`spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items`}},
		"restart on failure": {func() *batchv1.Job {
			j := withRules(batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: disruption})
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			return j
		}(), []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
	} {
		expectErrorTexts(t, name, registrytest.CreateSteps(JobRules, tc.job), tc.want...)
	}
}

func expectErrorTexts(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Job's restart policy, deadline and Indexed limits in kube-apiserver's words.
func TestJobSpecValidationWords(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*batchv1.Job)
		want   []string
	}{
		"restartPolicy left to its default": {func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		"restartPolicy Always": {func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			[]string{`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		"activeDeadlineSeconds 0": {func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }, nil},
		"activeDeadlineSeconds -1": {func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1) },
			[]string{`spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0`}},
		"Indexed parallelism": {func(j *batchv1.Job) {
			j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism = ptr.To(batchv1.IndexedCompletion), registry.Int32Ptr(200_000), registry.Int32Ptr(100_001)
		}, []string{`spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed`}},
		"Indexed hostname": {func(j *batchv1.Job) {
			j.Name = strings.Repeat("a", 62)
			j.Spec.CompletionMode, j.Spec.Completions = ptr.To(batchv1.IndexedCompletion), registry.Int32Ptr(10)
		}, []string{`metadata.name: Invalid value: "` + strings.Repeat("a", 62) + `": will not able to create pod with invalid DNS label: ` + strings.Repeat("a", 62) + `-9`}},
	} {
		j := job()
		tc.change(j)
		expectErrorTexts(t, name, registrytest.CreateSteps(JobRules, j), tc.want...)
	}
}

func cronJob() *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: registrytest.ObjMeta("nightly"), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: job().Spec}}}
}

// A CronJob's time zone and job template as kube-apiserver checks them, and its updates
// checked as its creates (a schedule that was TZ= may stay so).
func TestCronJobValidationWords(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*batchv1.CronJob)
		want   []string
	}{
		"empty timeZone": {func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("") },
			[]string{`spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string`}},
		"timeZone with dots": {func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/../Paris") },
			[]string{`spec.timeZone: Invalid value: "Europe/../Paris": unknown time zone Europe/../Paris`}},
		"manual selector": {func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.ManualSelector = ptr.To(true)
			c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"run": "pi"}}
		}, []string{
			`spec.jobTemplate.spec.selector: Invalid value: {"matchLabels":{"run":"pi"}}: ` + "`selector` will be auto-generated",
			`spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"`,
		}},
	} {
		c := cronJob()
		tc.change(c)
		expectErrorTexts(t, name, registrytest.CreateSteps(CronJobRules, c), tc.want...)
	}

	old := cronJob()
	if errs := registrytest.CreateSteps(CronJobRules, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	changed := old.DeepCopy()
	changed.Spec.Schedule, changed.Spec.ConcurrencyPolicy = "every day", "Sometimes"
	changed.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	expectErrorTexts(t, "update", registrytest.UpdateSteps(CronJobRules, changed, old),
		`spec.schedule: Invalid value: "every day": expected exactly 5 fields, found 2: [every day]`,
		`spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`,
		`spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`)

	legacy := old.DeepCopy()
	legacy.Spec.Schedule = "CRON_TZ=UTC 0 3 * * *"
	changed = legacy.DeepCopy()
	changed.Spec.Suspend = ptr.To(true)
	expectErrorTexts(t, "update of a TZ= schedule", registrytest.UpdateSteps(CronJobRules, changed, legacy))
	changed.Spec.TimeZone = ptr.To("Etc/UTC")
	expectErrorTexts(t, "TZ= schedule and timeZone", registrytest.UpdateSteps(CronJobRules, changed, legacy),
		`spec.schedule: Invalid value: "CRON_TZ=UTC 0 3 * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`)
	changed = old.DeepCopy()
	changed.Spec.Schedule = "TZ=UTC 0 3 * * *"
	expectErrorTexts(t, "TZ= added", registrytest.UpdateSteps(CronJobRules, changed, old),
		`spec.schedule: Invalid value: "TZ=UTC 0 3 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`)
}

// A CronJob wrong everywhere is answered in the order of kube's validateCronJobSpec
// (checked against kube-apiserver v1.36.3): the job template before the history limits.
func TestCronJobErrorOrder(t *testing.T) {
	c := cronJob()
	c.Spec.Schedule, c.Spec.TimeZone, c.Spec.ConcurrencyPolicy = "61 * * * *", ptr.To("Mars/Olympus"), "Sometimes"
	c.Spec.StartingDeadlineSeconds, c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int64](-5), ptr.To[int32](-1)
	c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	c.Spec.JobTemplate.Spec.ManualSelector = ptr.To(true)
	registrytest.ExpectErrorsInOrder(t, "cronjob", registrytest.CreateSteps(CronJobRules, c),
		"spec.schedule: FieldValueInvalid", "spec.startingDeadlineSeconds: FieldValueInvalid", "spec.timeZone: FieldValueInvalid",
		"spec.concurrencyPolicy: FieldValueNotSupported", "spec.jobTemplate.spec.template.spec.restartPolicy: FieldValueRequired",
		"spec.jobTemplate.spec.manualSelector: FieldValueNotSupported", "spec.successfulJobsHistoryLimit: FieldValueInvalid")
}

// A Job whose selector is generated must keep the generated labels and selector, as
// kube-apiserver's validateGeneratedSelector says.
func TestJobGeneratedSelectorValidation(t *testing.T) {
	j := job()
	j.Spec.Template.Labels["job-name"] = "other"
	expectErrorTexts(t, "conflicting job-name", registrytest.CreateSteps(JobRules, j),
		`spec.template.metadata.labels[job-name]: Invalid value: {"batch.kubernetes.io/controller-uid":"0a1b","batch.kubernetes.io/job-name":"pi","controller-uid":"0a1b","job-name":"other","run":"pi"}: must be 'pi'`)

	j = job()
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"run": "pi"}}
	expectErrorTexts(t, "selector of the user's", registrytest.CreateSteps(JobRules, j),
		`spec.selector: Invalid value: {"matchLabels":{"batch.kubernetes.io/controller-uid":"0a1b","run":"pi"}}: `+"`selector` not auto-generated")

	j = job()
	if errs := registrytest.CreateSteps(JobRules, j); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	changed := j.DeepCopy()
	delete(changed.Spec.Template.Labels, batchv1.ControllerUidLabel)
	changed.Spec.Template.Labels[batchv1.JobNameLabel] = "x"
	errs := registrytest.UpdateSteps(JobRules, changed, j)
	registrytest.ExpectMessage(t, errs, "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]", "Required value: must be '0a1b'")
	registrytest.ExpectMessage(t, errs, "spec.template.metadata.labels[batch.kubernetes.io/job-name]", "must be 'pi'")
}
