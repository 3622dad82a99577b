package apps

import (
	"fmt"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var StatefulSetRules = registry.Rules{
	SubresourceUpdates: statusRules(validateStatefulSetStatus),
	Generation:         true,
	// On update, kube warns of the claim templates and the history limit every time, and
	// names a claim template's spec "Spec".
	Warnings: func(obj, old runtime.Object) []string {
		s := obj.(*appsv1.StatefulSet)
		var out []string
		if registry.Regenerated(obj, old) {
			out = registry.TemplateWarnings(&s.Spec.Template, field.NewPath("spec"))
		}
		for i, pvc := range s.Spec.VolumeClaimTemplates {
			p := field.NewPath("spec", "volumeClaimTemplates").Index(i)
			if old != nil {
				p = p.Child("Spec")
			}
			out = append(out, registry.PVCSpecWarnings(p, pvc.Spec)...)
		}
		if l := s.Spec.RevisionHistoryLimit; l != nil && *l < 0 {
			out = append(out, "spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended")
		}
		return out
	},
	Default: func(obj runtime.Object) { defaultStatefulSet(obj.(*appsv1.StatefulSet)) },
	PrepareCreate: func(obj runtime.Object) {
		s := obj.(*appsv1.StatefulSet)
		s.Status = appsv1.StatefulSetStatus{}
		dropMaxUnavailable(s, nil)
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		dropMaxUnavailable(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
	},
	Validate: func(obj runtime.Object) field.ErrorList { return validateStatefulSet(obj.(*appsv1.StatefulSet)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
		// As kube's ValidateStatefulSetUpdate: not the name, serviceName and claim templates
		// again (fixed at creation), and not the template's pod spec while the stored spec is itself invalid (stored before validation got stricter),
		// so such a StatefulSet can still be scaled or freed of its finalizers.
		storedValid := len(validateStatefulSetSpec(&o.Spec, false, true)) == 0
		errs := validateStatefulSetSpec(&s.Spec, false, storedValid)
		// Only these may change; the rest of the spec is fixed at creation.
		fixed := o.Spec.DeepCopy()
		defaultClaimTemplates(fixed) // stored before they were defaulted so
		fixed.Replicas, fixed.Ordinals, fixed.Template = s.Spec.Replicas, s.Spec.Ordinals, s.Spec.Template
		fixed.UpdateStrategy, fixed.RevisionHistoryLimit = s.Spec.UpdateStrategy, s.Spec.RevisionHistoryLimit
		fixed.PersistentVolumeClaimRetentionPolicy, fixed.MinReadySeconds = s.Spec.PersistentVolumeClaimRetentionPolicy, s.Spec.MinReadySeconds
		if !equality.Semantic.DeepEqual(fixed, &s.Spec) {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
		}
		return errs
	},
	Scale: registry.ReplicasScale(func(s *appsv1.StatefulSet) (**int32, int32, string) {
		return &s.Spec.Replicas, s.Status.Replicas, registry.SelectorText(s.Spec.Selector)
	}),
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Ready", "string", "Number of the pod with ready state", false),
			registry.AgeColumn, registry.ContainersColumn, registry.ImagesColumn,
		},
		Row: func(obj runtime.Object) []any {
			s := obj.(*appsv1.StatefulSet)
			names, images := registry.ContainerCells(&s.Spec.Template)
			return []any{s.Name, registry.Ratio(s.Status.ReadyReplicas, registry.Deref(s.Spec.Replicas)), registry.Age(s.CreationTimestamp), names, images}
		},
	},
}

// dropMaxUnavailable drops rollingUpdate.maxUnavailable unless the stored StatefulSet has
// it, as kube-apiserver does with its MaxUnavailableStatefulSet gate off (its default):
// the controller rolls one pod at a time.
func dropMaxUnavailable(s, old *appsv1.StatefulSet) {
	if old != nil && old.Spec.UpdateStrategy.RollingUpdate != nil && old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		return
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		ru.MaxUnavailable = nil
	}
}

func defaultStatefulSet(s *appsv1.StatefulSet) {
	spec := &s.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		registry.DefaultInt32(&ru.Partition, 0)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	registry.DefaultInt32(&spec.Replicas, 1)
	registry.DefaultInt32(&spec.RevisionHistoryLimit, 10)
	registry.DefaultPodTemplate(&spec.Template)
	defaultClaimTemplates(spec)
}

// defaultClaimTemplates applies a claim's defaults to each claim template, and gives it
// apiVersion v1 and kind PersistentVolumeClaim whatever was sent, as kube-apiserver's
// conversion of apps/v1 StatefulSets does (kubernetes issue 87583).
func defaultClaimTemplates(spec *appsv1.StatefulSetSpec) {
	for i := range spec.VolumeClaimTemplates {
		t := &spec.VolumeClaimTemplates[i]
		poddefaults.Claim(t)
		t.APIVersion, t.Kind = "v1", "PersistentVolumeClaim"
	}
}

func validateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	// A DNS label: it names the pods, and their hostnames.
	return append(registry.ValidateMeta(s, true, validation.NameIsDNSLabel), validateStatefulSetSpec(&s.Spec, true, true)...)
}

// validateStatefulSetSpec is kube's ValidateStatefulSetSpec; only on create are the
// serviceName and claim templates checked, and without podSpec the template's pod spec is not.
func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, create, podSpec bool) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")
	switch spec.PodManagementPolicy {
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(path.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	us := path.Child("updateStrategy")
	switch spec.UpdateStrategy.Type {
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(us.Child("rollingUpdate"), spec.UpdateStrategy.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			errs = append(errs, registry.NonNegative(ru.Partition, us.Child("rollingUpdate", "partition"))...)
			errs = append(errs, validateMaxUnavailable(ru.MaxUnavailable, us.Child("rollingUpdate", "maxUnavailable"))...)
		}
	default:
		errs = append(errs, field.Invalid(us, internalUpdateStrategy(spec.UpdateStrategy),
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		policies := []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
		rp := path.Child("persistentVolumeClaimRetentionPolicy")
		for _, c := range []struct {
			name string
			v    appsv1.PersistentVolumeClaimRetentionPolicyType
		}{{"whenDeleted", p.WhenDeleted}, {"whenScaled", p.WhenScaled}} {
			if !slices.Contains(policies, c.v) {
				errs = append(errs, field.NotSupported(rp.Child(c.name), c.v, policies))
			}
		}
	}
	if create {
		for i := range spec.VolumeClaimTemplates {
			errs = append(errs, corevalidation.ValidateClaimSpec(&spec.VolumeClaimTemplates[i].Spec, path.Child("volumeClaimTemplates").Index(i).Child("spec"))...)
		}
	}
	errs = append(errs, registry.NonNegative(spec.Replicas, path.Child("replicas"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, validation.ValidateNonnegativeField(int64(spec.Ordinals.Start), path.Child("ordinals", "start"))...)
	}
	if create && spec.ServiceName != "" {
		errs = append(errs, corevalidation.InvalidEach(path.Child("serviceName"), spec.ServiceName, utilvalidation.IsDNS1123Label(spec.ServiceName))...)
	}
	return append(errs, registry.ValidateWorkloadSelector(spec.Selector, statefulSetPodTemplate(spec), path, "statefulset", "StatefulSet", podSpec)...)
}

// internalUpdateStrategy is strategy as kube's internal type holds it: kube reports an
// unknown type with the whole strategy as its value, printed as that untagged struct
// marshals ({"Type":...,"RollingUpdate":...}).
func internalUpdateStrategy(strategy appsv1.StatefulSetUpdateStrategy) any {
	type rollingUpdate struct {
		Partition      int32
		MaxUnavailable *intstr.IntOrString
	}
	out := struct {
		Type          appsv1.StatefulSetUpdateStrategyType
		RollingUpdate *rollingUpdate
	}{Type: strategy.Type}
	if ru := strategy.RollingUpdate; ru != nil {
		out.RollingUpdate = &rollingUpdate{Partition: registry.Deref(ru.Partition), MaxUnavailable: ru.MaxUnavailable}
	}
	return out
}

// statefulSetPodTemplate is the template as kube's ValidateStatefulSetSpec validates it:
// with a volume for each claim template (the controller gives each pod its claims) and
// without the hostname and subdomain the controller sets on each pod.
func statefulSetPodTemplate(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	if spec.Template.Spec.Hostname == "" && spec.Template.Spec.Subdomain == "" && len(spec.VolumeClaimTemplates) == 0 {
		return &spec.Template
	}
	t := spec.Template.DeepCopy()
	t.Spec.Hostname, t.Spec.Subdomain = "", ""
	claims := sets.New[string]()
	var volumes []corev1.Volume
	for _, c := range spec.VolumeClaimTemplates {
		if claims.Has(c.Name) {
			continue
		}
		claims.Insert(c.Name)
		volumes = append(volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	for _, v := range t.Spec.Volumes {
		if !claims.Has(v.Name) {
			volumes = append(volumes, v)
		}
	}
	t.Spec.Volumes = volumes
	return t
}

// validateMaxUnavailable checks a StatefulSet's rollingUpdate.maxUnavailable: a count or
// percentage, not 0, at most 100%.
func validateMaxUnavailable(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	errs := registry.ValidateIntOrPercent(v, path)
	if v != nil && registry.IsZero(v) {
		errs = append(errs, field.Invalid(path, v, "cannot be 0"))
	}
	return append(errs, registry.AtMost100Percent(v, path)...)
}
