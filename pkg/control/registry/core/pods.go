// Package core holds the rules of the core/v1 kinds: namespaces, nodes, pods (with their
// ephemeral containers, resize and label keys), services and the cluster IPs and node ports
// they claim, endpoints (and discovery.k8s.io EndpointSlices), config maps, secrets, service
// accounts, events (core/v1 and events.k8s.io/v1, one storage as in Kubernetes), quotas and
// limit ranges, persistent volumes and claims, pod templates, replication controllers and
// component statuses, as Kubernetes' pkg/registry/core has them.
package core

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/internal/deletioncost"
	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	"github.com/minik8s/minik8s/pkg/qos"
)

var PodRules = registry.Rules{
	ReturnDeletedObject: true,
	// A pod's generation counts its spec's changes and its graceful deletion, as kube's
	// pod strategy (GA in 1.35); minilet reports the one it acted on as observedGeneration.
	Generation: true,
	// kube's pod status strategy keeps the owners: old kubelets corrupted them.
	StatusMetadata: func(meta, old metav1.Object) { meta.SetOwnerReferences(old.GetOwnerReferences()) },
	// kube's pod strategy warns of nothing on update; minik8s of a spec that changed.
	Warnings: func(obj, old runtime.Object) []string {
		pod := obj.(*corev1.Pod)
		var out []string
		if registry.Regenerated(obj, old) {
			out = registry.PodSpecWarnings(&pod.Spec, field.NewPath("spec"))
		}
		if old == nil {
			out = append(out, registry.PodWarnings(pod)...)
		}
		return out
	},
	Default: func(obj runtime.Object) {
		pod := obj.(*corev1.Pod)
		poddefaults.Pod(pod)
		clampGracePeriod(pod)
		podIPsAsKube(&pod.Status)
	},
	// The priority is the Priority admission plugin's to set (it refuses a pod whose
	// priority differs from its class's); Default gives 0 to a pod that got none.
	DefaultRequest: func(obj runtime.Object) {
		pod := obj.(*corev1.Pod)
		priority := pod.Spec.Priority
		poddefaults.Pod(pod)
		clampGracePeriod(pod)
		podIPsAsKube(&pod.Status)
		pod.Spec.Priority = priority
	},
	PrepareCreateWarnings: func(obj runtime.Object) []string { return appArmorAnnotationWarnings(obj.(*corev1.Pod)) },
	PrepareCreate: func(obj runtime.Object) {
		pod := obj.(*corev1.Pod)
		poddefaults.Pod(pod) // Default runs after PrepareCreate; the QoS class needs requests defaulted
		mergeLabelKeys(pod)
		copyAppArmorAnnotations(pod)
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.Class(pod)}
		// As kube's pod strategy (applySchedulingGatedCondition): a gated pod says why it
		// waits from the start, which `kubectl get pods` shows as SchedulingGated.
		if len(pod.Spec.SchedulingGates) != 0 {
			pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates",
				LastTransitionTime: metav1.Now()}}
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		p := obj.(*corev1.Pod)
		errs := validatePod(p)
		if len(p.Spec.EphemeralContainers) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create"))
		}
		if p.Spec.NodeName != "" && len(p.Spec.SchedulingGates) != 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "nodeName"), "cannot be set until all schedulingGates have been cleared"))
		}
		return append(errs, corevalidation.ValidateProfileAnnotations(p.Annotations, &p.Spec, field.NewPath("spec"))...)
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validatePodUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
	},
	Fields: func(obj runtime.Object) fields.Set {
		p := obj.(*corev1.Pod)
		return fields.Set{
			"spec.nodeName":            p.Spec.NodeName,
			"spec.restartPolicy":       string(p.Spec.RestartPolicy),
			"spec.schedulerName":       p.Spec.SchedulerName,
			"spec.serviceAccountName":  p.Spec.ServiceAccountName,
			"spec.hostNetwork":         boolText(p.Spec.HostNetwork),
			"status.phase":             string(p.Status.Phase),
			"status.podIP":             p.Status.PodIP,
			"status.nominatedNodeName": p.Status.NominatedNodeName,
			// Labels kube-apiserver's v1 conversion takes too: spec.host, old clients'
			// spec.nodeName; status.podIPs, which kube's selectable fields of a pod do not
			// carry, so it matches as an empty value.
			"spec.host":     p.Spec.NodeName,
			"status.podIPs": "",
		}
	},
	Table:              podTable,
	SubresourceUpdates: map[string]registry.SubresourceRules{"status": podStatusUpdate, "ephemeralcontainers": podEphemeralContainersUpdate, "resize": podResizeUpdate},
	// As kube's pod strategies: status writers own neither the spec nor the deletion
	// timestamp and owner references; resize and ephemeralcontainers writers own only what
	// they may change.
	ManagedFieldsReset: map[string]fieldpath.Filter{
		"status": fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences"))),
		"resize": fieldpath.NewIncludeMatcherFilter(
			fieldpath.MakePrefixMatcherOrDie("spec", "containers", fieldpath.MatchAnyPathElement(), "resources"),
			fieldpath.MakePrefixMatcherOrDie("spec", "containers", fieldpath.MatchAnyPathElement(), "resizePolicy"),
			fieldpath.MakePrefixMatcherOrDie("spec", "initContainers", fieldpath.MatchAnyPathElement(), "resources"),
			fieldpath.MakePrefixMatcherOrDie("spec", "initContainers", fieldpath.MatchAnyPathElement(), "resizePolicy")),
		"ephemeralcontainers": fieldpath.NewIncludeMatcherFilter(fieldpath.MakePrefixMatcherOrDie("spec", "ephemeralContainers")),
	},
	GracefulDelete: func(obj runtime.Object, requested *int64) (int64, bool) {
		p := obj.(*corev1.Pod)
		// An unscheduled or finished pod has nothing running to stop: no grace, but still
		// marked before it goes, as kube's pod strategy (CheckGracefulDelete) has it.
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return 0, true
		}
		grace := poddefaults.TerminationGracePeriod
		if p.Spec.TerminationGracePeriodSeconds != nil {
			grace = *p.Spec.TerminationGracePeriodSeconds
		}
		if requested != nil {
			grace = *requested
		}
		return grace, true
	},
}

func validatePod(p *corev1.Pod) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := validation.ValidateObjectMeta(&p.ObjectMeta, true, validation.NameIsDNSSubdomain, meta)
	errs = append(errs, corevalidation.ValidatePodSpecificAnnotations(p.Annotations, &p.Spec, meta.Child("annotations"), false)...)
	return append(errs, validatePodSpec(p)...)
}

// validatePodSpec checks a pod's spec, with what kube checks in a pod's and not in a template's.
func validatePodSpec(p *corev1.Pod) field.ErrorList {
	spec := field.NewPath("spec")
	names := sets.New[string]()
	errs := corevalidation.ValidatePodSpec(&p.Spec, p.Name, spec, names)
	errs = append(errs, corevalidation.ValidateEphemeralContainers(&p.Spec, spec.Child("ephemeralContainers"), names)...)
	// kube refuses a padded image in a pod, not in a template (a template's " " may stand for
	// an image a controller fills in).
	for i := range p.Spec.Containers {
		errs = append(errs, corevalidation.ImageWithoutPadding(&p.Spec.Containers[i], spec.Child("containers").Index(i))...)
	}
	for i := range p.Spec.InitContainers {
		errs = append(errs, corevalidation.ImageWithoutPadding(&p.Spec.InitContainers[i], spec.Child("initContainers").Index(i))...)
	}
	switch p.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), p.Spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	return errs
}

// updatablePodSpecFields are the fields kube's refusal of a pod update lists.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// validatePodUpdate enforces that a pod's spec is immutable except for the fields Kubernetes
// allows to change (images, activeDeadlineSeconds, tolerations additions, gates removed, a
// gated pod's node selection narrowed) and nodeName once set.
func validatePodUpdate(p, old *corev1.Pod) field.ErrorList {
	// A spec and annotations as stored passed when they were written: only changed ones
	// are checked again, so a pod kept from before a stricter check still reports its
	// status and can be deleted (kube checks neither a status update's nor a deletion's).
	meta := field.NewPath("metadata")
	specChanged := !equality.Semantic.DeepEqual(&p.Spec, &old.Spec)
	errs := validation.ValidateObjectMeta(&p.ObjectMeta, true, validation.NameIsDNSSubdomain, meta)
	if specChanged || !maps.Equal(p.Annotations, old.Annotations) {
		_, oldCostErr := deletioncost.Of(old.Annotations)
		errs = append(errs, corevalidation.ValidatePodSpecificAnnotations(p.Annotations, &p.Spec, meta.Child("annotations"), oldCostErr != nil)...)
		if specChanged {
			errs = append(errs, validatePodSpec(p)...)
		}
		errs = append(errs, corevalidation.ValidatePodSpecificAnnotationUpdates(p.Annotations, old.Annotations, &p.Spec, meta.Child("annotations"), oldCostErr != nil)...)
	}
	if old.Spec.NodeName != "" && p.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "nodeName"), "may not be changed once set"))
	}
	specPath := field.NewPath("spec")
	updErrs, stop := validatePodUpdatableFields(&p.Spec, &old.Spec, specPath)
	if errs = append(errs, updErrs...); stop {
		return errs
	}
	errs = append(errs, validateOnlyAddedTolerations(p.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(p.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)
	mutable := old.Spec.DeepCopy()
	mutable.ActiveDeadlineSeconds = p.Spec.ActiveDeadlineSeconds
	mutable.Tolerations = p.Spec.Tolerations
	mutable.NodeName = p.Spec.NodeName
	mutable.SchedulingGates = p.Spec.SchedulingGates
	if len(old.Spec.SchedulingGates) != 0 {
		// A gated pod's scheduling directives may still be narrowed (kube's ValidatePodUpdate).
		errs = append(errs, validateGatedSchedulingUpdate(specPath, &p.Spec, &old.Spec)...)
		mutable.NodeSelector = p.Spec.NodeSelector
		mutable.Affinity = withNodeAffinity(mutable.Affinity, p.Spec.Affinity)
	}
	for i := range mutable.Containers {
		mutable.Containers[i].Image = p.Spec.Containers[i].Image
	}
	for i := range mutable.InitContainers {
		mutable.InitContainers[i].Image = p.Spec.InitContainers[i].Image
	}
	if g, oldG := p.Spec.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; oldG != nil && *oldG < 0 && g != nil && *g == 1 {
		mutable.TerminationGracePeriodSeconds = g // a negative grace period may become 1
	}
	if !equality.Semantic.DeepEqual(mutable, &p.Spec) {
		// kube-apiserver's words, with the diff it appends (of its internal types' JSON, whose
		// field names are capitalized; ours are the API's).
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff.Diff(*mutable, p.Spec))))
	}
	return errs
}

// validatePodUpdatableFields is kube's check of what a pod update may change before the
// rest of its spec is compared: as many containers as before (stop: the rest would not
// line up) and an activeDeadlineSeconds that is kept, set or lowered (stop when out of
// range or raised).
func validatePodUpdatableFields(spec, old *corev1.PodSpec, path *field.Path) (field.ErrorList, bool) {
	if len(spec.Containers) != len(old.Containers) {
		return field.ErrorList{field.Forbidden(path.Child("containers"), "pod updates may not add or remove containers")}, true
	}
	if len(spec.InitContainers) != len(old.InitContainers) {
		return field.ErrorList{field.Forbidden(path.Child("initContainers"), "pod updates may not add or remove containers")}, true
	}
	deadline, p := spec.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds")
	switch {
	case deadline == nil && old.ActiveDeadlineSeconds != nil:
		return field.ErrorList{field.Invalid(p, deadline, "must not update from a positive integer to nil value")}, false
	case deadline == nil:
	case *deadline < 0 || *deadline > math.MaxInt32:
		return field.ErrorList{field.Invalid(p, *deadline, utilvalidation.InclusiveRangeError(0, math.MaxInt32))}, true
	case old.ActiveDeadlineSeconds != nil && *old.ActiveDeadlineSeconds < *deadline:
		return field.ErrorList{field.Invalid(p, *deadline, "must be less than or equal to previous value")}, true
	}
	return nil, false
}

// validateOnlyAddedTolerations refuses an update that removes or changes a toleration other
// than in its tolerationSeconds, as kube's.
func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, path *field.Path) field.ErrorList {
	for _, o := range old {
		if !slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool {
			o.TolerationSeconds = t.TolerationSeconds
			return equality.Semantic.DeepEqual(o, t)
		}) {
			return field.ErrorList{field.Forbidden(path, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// validateOnlyDeletedSchedulingGates refuses gates added by an update, as kube's: they
// may only be removed.
func validateOnlyDeletedSchedulingGates(gates, old []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range gates {
		if !slices.ContainsFunc(old, func(o corev1.PodSchedulingGate) bool { return o.Name == g.Name }) {
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// validateGatedSchedulingUpdate is what kube allows on a pod that is still gated: additions
// to spec.nodeSelector and to the required node affinity's terms (a new affinity where there
// was none), nothing removed or changed.
func validateGatedSchedulingUpdate(path *field.Path, spec, old *corev1.PodSpec) field.ErrorList {
	var errs field.ErrorList
	for k, v := range old.NodeSelector {
		if nv, ok := spec.NodeSelector[k]; !ok || nv != v {
			errs = append(errs, field.Invalid(path.Child("nodeSelector"), spec.NodeSelector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
			break
		}
	}
	required := func(a *corev1.Affinity) *corev1.NodeSelector {
		if a == nil || a.NodeAffinity == nil {
			return nil
		}
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	oldReq := required(old.Affinity)
	if oldReq == nil || len(oldReq.NodeSelectorTerms) == 0 {
		return errs
	}
	termsPath := path.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	var terms []corev1.NodeSelectorTerm
	if req := required(spec.Affinity); req != nil {
		terms = req.NodeSelectorTerms
	}
	if len(terms) != len(oldReq.NodeSelectorTerms) {
		return append(errs, field.Invalid(termsPath, terms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed"))
	}
	for i, o := range oldReq.NodeSelectorTerms {
		if !termHasOnlyAdditions(terms[i], o) {
			errs = append(errs, field.Invalid(termsPath.Index(i), terms[i], "only additions are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

// withNodeAffinity is old's pod (anti-)affinity with cur's node affinity: what an update of
// a gated pod may change.
func withNodeAffinity(old, cur *corev1.Affinity) *corev1.Affinity {
	var a corev1.Affinity
	if cur != nil {
		a.NodeAffinity = cur.NodeAffinity
	}
	if old != nil {
		a.PodAffinity, a.PodAntiAffinity = old.PodAffinity, old.PodAntiAffinity
	}
	if cur == nil && a == (corev1.Affinity{}) {
		return nil
	}
	return &a
}

func termHasOnlyAdditions(term, old corev1.NodeSelectorTerm) bool {
	if len(old.MatchExpressions) == 0 && len(old.MatchFields) == 0 && (len(term.MatchExpressions) > 0 || len(term.MatchFields) > 0) {
		return false
	}
	prefix := func(reqs, old []corev1.NodeSelectorRequirement) bool {
		return len(reqs) >= len(old) && equality.Semantic.DeepEqual(reqs[:len(old)], old)
	}
	return prefix(term.MatchExpressions, old.MatchExpressions) && prefix(term.MatchFields, old.MatchFields)
}

var podTable = &registry.TableDef{
	Columns: []metav1.TableColumnDefinition{
		registry.Column("Name", "string", "Name of the pod", false),
		registry.Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", false),
		registry.Column("Status", "string", "The aggregate status of the containers in this pod.", false),
		registry.Column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", false),
		registry.Column("Age", "string", "Time since creation", false),
		registry.Column("IP", "string", "The IP address assigned to the pod", true),
		registry.Column("Node", "string", "The node the pod is assigned to", true),
		registry.Column("Nominated Node", "string", "The node the pod is nominated to", true),
		registry.Column("Readiness Gates", "string", "The readiness gates of the pod", true),
	},
	Row: func(obj runtime.Object) []any {
		p := obj.(*corev1.Pod)
		c := podColumns(p)
		restarts := fmt.Sprint(c.restarts)
		if c.restarts != 0 && !c.lastRestart.IsZero() {
			restarts = fmt.Sprintf("%d (%s ago)", c.restarts, registry.Age(c.lastRestart))
		}
		ip := ""
		if len(p.Status.PodIPs) > 0 {
			ip = p.Status.PodIPs[0].IP
		}
		return []any{p.Name, fmt.Sprintf("%d/%d", c.ready, c.total), c.status, restarts, registry.Age(p.CreationTimestamp),
			orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), readinessGates(p)}
	},
}

// podRow is what `kubectl get pods` shows of a pod's containers.
type podRow struct {
	ready, total, restarts int
	status                 string
	lastRestart            metav1.Time
}

// podColumns computes the READY, STATUS and RESTARTS columns as kube-apiserver's pod printer
// does (pkg/printers/internalversion printPod): sidecars (restartable init containers) count
// among the containers once started, a failed or waiting init container shows as Init:...,
// and a pod being deleted as Terminating until its phase is terminal.
func podColumns(p *corev1.Pod) podRow {
	row := podRow{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		row.status = p.Status.Reason
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			row.status = corev1.PodReasonSchedulingGated
		}
	}
	sidecars := map[string]bool{}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; isSidecar(c) {
			sidecars[c.Name] = true
			row.total++
		}
	}
	var sidecarRestarts int
	var lastSidecarRestart metav1.Time
	initializing := false
	for i, cs := range p.Status.InitContainerStatuses {
		row.restarts += int(cs.RestartCount)
		laterOf(&row.lastRestart, cs.LastTerminationState.Terminated)
		if sidecars[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			laterOf(&lastSidecarRestart, cs.LastTerminationState.Terminated)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				row.ready++
			}
			continue
		case cs.State.Terminated != nil:
			row.status = "Init:" + terminatedText(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			row.status = "Init:" + cs.State.Waiting.Reason
		default:
			row.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podConditionTrue(p, corev1.PodInitialized) {
		row.restarts, row.lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning, errorReason := false, ""
		for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := p.Status.ContainerStatuses[i]
			row.restarts += int(cs.RestartCount)
			laterOf(&row.lastRestart, cs.LastTerminationState.Terminated)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				row.status = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				row.status = terminatedText(cs.State.Terminated)
				if cs.State.Terminated.ExitCode != 0 {
					errorReason = row.status
				}
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				row.ready++
			}
		}
		if row.status == "Completed" {
			switch {
			case hasRunning && podConditionTrue(p, corev1.PodReady):
				row.status = "Running"
			case errorReason != "":
				row.status = errorReason
			case hasRunning:
				row.status = "NotReady"
			}
		}
	}
	switch {
	case p.DeletionTimestamp != nil && p.Status.Reason == "NodeLost":
		row.status = "Unknown"
	case p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
		row.status = "Terminating"
	}
	return row
}

// laterOf moves last to t's finish if t finished later.
func laterOf(last *metav1.Time, t *corev1.ContainerStateTerminated) {
	if t != nil && last.Before(&t.FinishedAt) {
		*last = t.FinishedAt
	}
}

func podConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func terminatedText(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func readinessGates(p *corev1.Pod) string {
	if len(p.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	ready := 0
	for _, g := range p.Spec.ReadinessGates {
		for _, c := range p.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(p.Spec.ReadinessGates))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// podIPsAsKube is what kube's round trip through its internal PodStatus, which has only
// podIPs, makes of podIP and podIPs: podIP wins when both are sent and differ (as for older
// kubelets), podIPs takes podIP when sent alone, and podIP is podIPs[0].
func podIPsAsKube(s *corev1.PodStatus) {
	if s.PodIP != "" && (len(s.PodIPs) == 0 || s.PodIPs[0].IP != s.PodIP) {
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
}

// clampGracePeriod makes a negative terminationGracePeriodSeconds 1, as kube's conversion
// of a Pod does (a pod template keeps it, with a warning).
func clampGracePeriod(pod *corev1.Pod) {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
}
