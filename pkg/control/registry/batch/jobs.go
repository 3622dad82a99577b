// Package batch holds the rules of the batch/v1 kinds: Jobs (with their success, failure
// and backoff policies) and CronJobs, as Kubernetes' pkg/registry/batch has them.
package batch

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/jobutil"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// legacyJobNameLabel and legacyControllerUIDLabel are the unprefixed labels Kubernetes
// still sets beside batch.kubernetes.io/job-name and batch.kubernetes.io/controller-uid.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

var JobRules = registry.Rules{
	Generation:              true,
	OrphanDependentsWarning: "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning",
	SubresourceUpdates:      map[string]registry.SubresourceRules{"status": jobStatusUpdate},
	Warnings: func(obj, old runtime.Object) []string {
		j := obj.(*batchv1.Job)
		out := registry.WorkloadNameWarnings(j.Name, old)
		if registry.Regenerated(obj, old) {
			out = append(out, jobSpecWarnings(&j.Spec, field.NewPath("spec"))...)
		}
		return out
	},
	// Defaulting copies the template's labels to the Job, so the selector is generated first.
	PrepareCreate: func(obj runtime.Object) {
		j := obj.(*batchv1.Job)
		j.Status = batchv1.JobStatus{}
		generateJobSelector(j)
	},
	Default:  func(obj runtime.Object) { defaultJob(obj.(*batchv1.Job)) },
	Validate: func(obj runtime.Object) field.ErrorList { return validateJob(obj.(*batchv1.Job)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
		spec := field.NewPath("spec")
		errs := validateJob(j) // then in kube's order (ValidateJobSpecUpdate)
		errs = append(errs, validateCompletionsUpdate(&j.Spec, &o.Spec, spec.Child("completions"))...)
		errs = append(errs, registry.Immutable(j.Spec.Selector, o.Spec.Selector, spec.Child("selector"))...)
		errs = append(errs, validateJobTemplateUpdate(j, o, spec.Child("template"))...)
		errs = append(errs, registry.Immutable(j.Spec.CompletionMode, o.Spec.CompletionMode, spec.Child("completionMode"))...)
		errs = append(errs, registry.Immutable(j.Spec.PodFailurePolicy, o.Spec.PodFailurePolicy, spec.Child("podFailurePolicy"))...)
		errs = append(errs, registry.Immutable(j.Spec.BackoffLimitPerIndex, o.Spec.BackoffLimitPerIndex, spec.Child("backoffLimitPerIndex"))...)
		errs = append(errs, registry.Immutable(j.Spec.ManagedBy, o.Spec.ManagedBy, spec.Child("managedBy"))...)
		return append(errs, registry.Immutable(j.Spec.SuccessPolicy, o.Spec.SuccessPolicy, spec.Child("successPolicy"))...)
	},
	Fields: func(obj runtime.Object) fields.Set {
		return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Status", "string", "Status of the job.", false),
			registry.Column("Completions", "string", batchv1.JobStatus{}.SwaggerDoc()["succeeded"], false),
			registry.Column("Duration", "string", "Time required to complete the job.", false),
			registry.AgeColumn, registry.ContainersColumn, registry.ImagesColumn,
			registry.Column("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			j := obj.(*batchv1.Job)
			names, images := registry.ContainerCells(&j.Spec.Template)
			return []any{j.Name, jobStatusText(j), jobCompletions(j), jobDuration(j), registry.Age(j.CreationTimestamp), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
		},
	},
}

// generateJobSelector gives a Job without a manual selector the selector Kubernetes
// generates: its pods carry the job's name and uid, and the selector picks the uid.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	generated := map[string]string{
		legacyJobNameLabel: j.Name, batchv1.JobNameLabel: j.Name,
		legacyControllerUIDLabel: string(j.UID), batchv1.ControllerUidLabel: string(j.UID),
	}
	for k, v := range generated {
		if _, set := j.Spec.Template.Labels[k]; !set { // a conflicting label fails validation
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !set {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

// defaultJob is Kubernetes' batch/v1 Job defaulting.
func defaultJob(j *batchv1.Job) {
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = registry.Int32Ptr(1)
	}
	registry.DefaultInt32(&s.Parallelism, 1)
	if s.BackoffLimitPerIndex != nil {
		registry.DefaultInt32(&s.BackoffLimit, 1<<31-1)
	}
	registry.DefaultInt32(&s.BackoffLimit, 6)
	if len(j.Labels) == 0 && s.Template.Labels != nil {
		j.Labels = maps.Clone(s.Template.Labels)
	}
	if s.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		s.CompletionMode = &mode
	}
	if s.Suspend == nil {
		f := false
		s.Suspend = &f
	}
	if s.PodReplacementPolicy == nil {
		policy := batchv1.TerminatingOrFailed
		if s.PodFailurePolicy != nil {
			policy = batchv1.Failed
		}
		s.PodReplacementPolicy = &policy
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr.To(false)
	}
	defaultPodFailurePolicy(s.PodFailurePolicy)
	registry.DefaultPodTemplate(&s.Template)
}

// defaultPodFailurePolicy: a condition pattern without a status matches True, as kube's
// SetDefaults_PodFailurePolicyOnPodConditionsPattern.
func defaultPodFailurePolicy(p *batchv1.PodFailurePolicy) {
	if p == nil {
		return
	}
	for i := range p.Rules {
		for j := range p.Rules[i].OnPodConditions {
			if c := &p.Rules[i].OnPodConditions[j]; c.Status == "" {
				c.Status = corev1.ConditionTrue
			}
		}
	}
}

func validateJob(j *batchv1.Job) field.ErrorList {
	// in kube's order (ValidateJob, ValidateJobSpec): the generated selector, the spec, then the selector
	errs := registry.ValidateMeta(j, true, validation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
		errs = append(errs, validateGeneratedSelector(j, spec)...)
	}
	errs = append(errs, validateJobSpec(&j.Spec, spec)...)
	if j.Spec.Selector == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(j.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	}
	// a missing selector selects nothing, so it too does not match
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(j.Spec.Template.Labels)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), j.Spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if c := j.Spec.Completions; c != nil && *c > 0 && j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
		// the pods' hostnames are <job>-<index>
		if hostname := fmt.Sprintf("%s-%d", j.Name, *c-1); len(utilvalidation.IsDNS1123Label(hostname)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+hostname))
		}
	}
	return errs
}

// validateGeneratedSelector: a Job whose selector was generated keeps the labels that were
// put on its template and a selector that picks only them, as kube-apiserver checks.
func validateGeneratedSelector(j *batchv1.Job, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	labelsPath := spec.Child("template", "metadata", "labels")
	want := map[string]string{legacyControllerUIDLabel: string(j.UID), legacyJobNameLabel: j.Name,
		batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name}
	for _, key := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		switch got, found := j.Spec.Template.Labels[key]; {
		case !found:
			errs = append(errs, field.Required(labelsPath.Key(key), fmt.Sprintf("must be '%s'", want[key])))
		case got != want[key]:
			errs = append(errs, field.Invalid(labelsPath.Key(key), j.Spec.Template.Labels, fmt.Sprintf("must be '%s'", want[key])))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(labels.Set(want)) {
		errs = append(errs, field.Invalid(spec.Child("selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateJobSpec(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	errs := registry.NonNegative(s.Parallelism, path.Child("parallelism"))
	errs = append(errs, registry.NonNegative(s.Completions, path.Child("completions"))...)
	errs = append(errs, registry.NonNegative(s.BackoffLimit, path.Child("backoffLimit"))...)
	errs = append(errs, registry.NonNegative(s.TTLSecondsAfterFinished, path.Child("ttlSecondsAfterFinished"))...)
	if a := s.ActiveDeadlineSeconds; a != nil {
		errs = append(errs, validation.ValidateNonnegativeField(*a, path.Child("activeDeadlineSeconds"))...)
	}
	if m := s.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if s.Completions == nil {
				errs = append(errs, field.Required(path.Child("completions"), "when completion mode is Indexed"))
			}
			if p := s.Parallelism; p != nil && *p > maxIndexedParallelism {
				errs = append(errs, field.Invalid(path.Child("parallelism"), *p, fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxIndexedParallelism)))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	errs = append(errs, validateJobPolicies(s, path)...)
	template := path.Child("template")
	errs = append(errs, registry.ValidatePodTemplate(&s.Template, template, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	// The pod defaults leave Always where none was given: kube-apiserver calls it missing.
	switch restart, policy := template.Child("spec", "restartPolicy"), s.Template.Spec.RestartPolicy; {
	case policy == corev1.RestartPolicyAlways:
		errs = append(errs, field.Required(restart, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case s.PodFailurePolicy != nil && policy == corev1.RestartPolicyOnFailure:
		errs = append(errs, field.Invalid(restart, policy, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateCompletionsUpdate: completions is immutable, except that an Indexed Job may scale
// it together with parallelism (elastic Indexed Jobs).
func validateCompletionsUpdate(s, old *batchv1.JobSpec, path *field.Path) field.ErrorList {
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		return registry.Immutable(s.Completions, old.Completions, path)
	}
	if s.Completions == nil || (old.Completions != nil && *s.Completions == *old.Completions) {
		return nil // a missing completions is reported by validateJobSpec
	}
	if *s.Completions != registry.Deref(s.Parallelism) {
		return field.ErrorList{field.Invalid(path, *s.Completions, "can only be modified in tandem with spec.parallelism")}
	}
	return nil
}

// validateJobTemplateUpdate: the pod template is immutable, except that a suspended Job with
// no active pods that never started (or was suspended since) may change its scheduling
// directives (node affinity, nodeSelector, tolerations, schedulingGates, labels and
// annotations) and its containers' resources, as Kubernetes 1.36 allows
// (MutableSchedulingDirectivesForSuspendedJobs, MutablePodResourcesForSuspendedJobs).
func validateJobTemplateUpdate(j, o *batchv1.Job, path *field.Path) field.ErrorList {
	suspended := o.Spec.Suspend != nil && *o.Spec.Suspend
	notStarted := o.Status.StartTime == nil || jobutil.ConditionTrue(o, batchv1.JobSuspended)
	if !suspended || !notStarted || o.Status.Active > 0 {
		return registry.Immutable(j.Spec.Template, o.Spec.Template, path)
	}
	t, old := &j.Spec.Template, o.Spec.Template.DeepCopy()
	switch {
	case t.Spec.Affinity == nil && old.Spec.Affinity != nil:
		old.Spec.Affinity.NodeAffinity = nil // clearing affinity is fine when it held only node affinity
		if *old.Spec.Affinity == (corev1.Affinity{}) {
			old.Spec.Affinity = nil
		}
	case t.Spec.Affinity != nil && old.Spec.Affinity == nil:
		old.Spec.Affinity = &corev1.Affinity{NodeAffinity: t.Spec.Affinity.NodeAffinity}
	case t.Spec.Affinity != nil:
		old.Spec.Affinity.NodeAffinity = t.Spec.Affinity.NodeAffinity
	}
	old.Spec.NodeSelector, old.Spec.Tolerations, old.Spec.SchedulingGates = t.Spec.NodeSelector, t.Spec.Tolerations, t.Spec.SchedulingGates
	for _, pair := range []struct{ new, old []corev1.Container }{{t.Spec.Containers, old.Spec.Containers}, {t.Spec.InitContainers, old.Spec.InitContainers}} {
		if len(pair.new) != len(pair.old) {
			continue
		}
		for i := range pair.new {
			if pair.new[i].Name == pair.old[i].Name {
				pair.old[i].Resources = pair.new[i].Resources
			}
		}
	}
	return registry.Immutable(t.Spec, old.Spec, path.Child("spec"))
}

// jobStatusText is the STATUS column of `kubectl get jobs`.
func jobStatusText(j *batchv1.Job) string {
	switch {
	case jobutil.ConditionTrue(j, batchv1.JobComplete):
		return "Complete"
	case jobutil.ConditionTrue(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobutil.ConditionTrue(j, batchv1.JobSuspended):
		return "Suspended"
	case jobutil.ConditionTrue(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobutil.ConditionTrue(j, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// jobCompletions is the COMPLETIONS column: "1/3", or "1/1 of 4" for a work queue.
func jobCompletions(j *batchv1.Job) string {
	if c := j.Spec.Completions; c != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *c)
	}
	if p := registry.Deref(j.Spec.Parallelism); p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDuration(j *batchv1.Job) string {
	switch st := j.Status; {
	case st.StartTime == nil:
		return ""
	case st.CompletionTime == nil:
		return duration.HumanDuration(time.Since(st.StartTime.Time))
	default:
		return duration.HumanDuration(st.CompletionTime.Sub(st.StartTime.Time))
	}
}

var CronJobRules = registry.Rules{
	Generation: true,
	Warnings: func(obj, old runtime.Object) []string {
		cj := obj.(*batchv1.CronJob)
		out := registry.WorkloadNameWarnings(cj.Name, old)
		if registry.Regenerated(obj, old) {
			out = append(out, jobSpecWarnings(&cj.Spec.JobTemplate.Spec, field.NewPath("spec", "jobTemplate", "spec"))...)
		}
		// validation refuses TZ in a new schedule; kube warns of an old one on update, under that field name
		if strings.Contains(cj.Spec.Schedule, "TZ") {
			out = append(out, "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
		}
		return out
	},
	Default:       func(obj runtime.Object) { defaultCronJob(obj.(*batchv1.CronJob)) },
	PrepareCreate: func(obj runtime.Object) { obj.(*batchv1.CronJob).Status = batchv1.CronJobStatus{} },
	Validate:      func(obj runtime.Object) field.ErrorList { return validateCronJob(obj.(*batchv1.CronJob)) },
	// An update is checked as a create but for the name's length (kube lets older, longer
	// names be edited and deleted).
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validateCronJobSpec(&obj.(*batchv1.CronJob).Spec, &old.(*batchv1.CronJob).Spec, field.NewPath("spec"))
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"], false),
			registry.Column("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"], false),
			registry.Column("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"], false),
			registry.IntegerColumn("Active", batchv1.CronJobStatus{}.SwaggerDoc()["active"]),
			registry.Column("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"], false),
			registry.AgeColumn, registry.ContainersColumn, registry.ImagesColumn,
			registry.Column("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"], true),
		},
		Row: func(obj runtime.Object) []any {
			c := obj.(*batchv1.CronJob)
			last, tz, suspend := "<none>", "<none>", "<unset>"
			if t := c.Status.LastScheduleTime; t != nil {
				last = registry.Age(*t)
			}
			if c.Spec.TimeZone != nil {
				tz = *c.Spec.TimeZone
			}
			if c.Spec.Suspend != nil {
				suspend = map[bool]string{true: "True", false: "False"}[*c.Spec.Suspend]
			}
			t := &c.Spec.JobTemplate.Spec
			names, images := registry.ContainerCells(&t.Template)
			return []any{c.Name, c.Spec.Schedule, tz, suspend, int64(len(c.Status.Active)), last, registry.Age(c.CreationTimestamp), names, images, metav1.FormatLabelSelector(t.Selector)}
		},
	},
}

func defaultCronJob(c *batchv1.CronJob) {
	s := &c.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		f := false
		s.Suspend = &f
	}
	registry.DefaultInt32(&s.SuccessfulJobsHistoryLimit, 3)
	registry.DefaultInt32(&s.FailedJobsHistoryLimit, 1)
	defaultPodFailurePolicy(s.JobTemplate.Spec.PodFailurePolicy)
	registry.DefaultPodTemplate(&s.JobTemplate.Spec.Template)
}

// cronJobNameMax leaves room for the 11-character suffix of the Jobs a CronJob creates.
const cronJobNameMax = 52

func validateCronJob(c *batchv1.CronJob) field.ErrorList {
	errs := registry.ValidateMeta(c, true, validation.NameIsDNSSubdomain)
	if len(c.Name) > cronJobNameMax {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMax)))
	}
	return append(errs, validateCronJobSpec(&c.Spec, nil, field.NewPath("spec"))...)
}

// validIANAZone is what a time zone name may hold between slashes, as kube-apiserver reads
// the IANA rules (digits and + allowed for the legacy names).
var validIANAZone = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateCronJobSpec checks a CronJob's spec; on an update (old set) a schedule that held
// TZ= may keep it and an unchanged time zone is not looked up again, as kube-apiserver.
func validateCronJobSpec(s, old *batchv1.CronJobSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Schedule == "" {
		errs = append(errs, field.Required(spec.Child("schedule"), ""))
	} else {
		if _, err := cron.ParseStandard(s.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("schedule"), s.Schedule, err.Error()))
		}
		legacyTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		switch tz := strings.Contains(s.Schedule, "TZ"); {
		case legacyTZ && tz && s.TimeZone != nil:
			errs = append(errs, field.Invalid(spec.Child("schedule"), s.Schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
		case !legacyTZ && tz:
			errs = append(errs, field.Invalid(spec.Child("schedule"), s.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if d := s.StartingDeadlineSeconds; d != nil {
		errs = append(errs, validation.ValidateNonnegativeField(*d, spec.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !ptr.Equal(old.TimeZone, s.TimeZone) {
		errs = append(errs, validateTimeZone(s.TimeZone, spec.Child("timeZone"))...)
	}
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	default:
		errs = append(errs, field.NotSupported(spec.Child("concurrencyPolicy"), s.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jt, t := spec.Child("jobTemplate", "spec"), &s.JobTemplate.Spec
	errs = append(errs, validateJobSpec(t, jt)...)
	if t.Selector != nil {
		errs = append(errs, field.Invalid(jt.Child("selector"), t.Selector, "`selector` will be auto-generated"))
	}
	if t.ManualSelector != nil && *t.ManualSelector {
		errs = append(errs, field.NotSupported(jt.Child("manualSelector"), t.ManualSelector, []string{"nil", "false"}))
	}
	errs = append(errs, registry.NonNegative(s.SuccessfulJobsHistoryLimit, spec.Child("successfulJobsHistoryLimit"))...)
	return append(errs, registry.NonNegative(s.FailedJobsHistoryLimit, spec.Child("failedJobsHistoryLimit"))...)
}

func validateTimeZone(tz *string, path *field.Path) field.ErrorList {
	switch {
	case tz == nil:
		return nil
	case *tz == "":
		return field.ErrorList{field.Invalid(path, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validIANAZone.MatchString(part) {
			return field.ErrorList{field.Invalid(path, *tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(path, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(path, *tz, err.Error()))
	}
	return errs
}

// jobSpecWarnings is kube's WarningsForJobSpec: an Indexed Job too big to track its
// failed indexes, then the pod template's warnings.
func jobSpecWarnings(spec *batchv1.JobSpec, path *field.Path) []string {
	var out []string
	if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion &&
		ptr.Deref(spec.Completions, 0) > 100_000 && ptr.Deref(spec.Parallelism, 0) > 10_000 {
		out = append(out, fmt.Sprintf("%s: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail", path))
	}
	return append(out, registry.TemplateWarnings(&spec.Template, path)...)
}
