// Package limitranger is Kubernetes' LimitRanger admission plugin: the LimitRanges of a
// namespace give its containers default requests and limits (Admit) and bound containers,
// pods and PersistentVolumeClaims by min, max and maxLimitRequestRatio (Validate), with
// kube-apiserver's messages ("maximum cpu usage per Container is 1, but limit is 2").
package limitranger

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Annotation records on a pod which defaults the plugin set.
const Annotation = "kubernetes.io/limit-ranger"

// Plugin reads LimitRanges from the shared informer, with a live lookup for a namespace
// the informer has none in yet.
type Plugin struct {
	informers *admission.Informers
	ranges    corelisters.LimitRangeLister
	synced    func() bool
	live      admission.LiveLookup[*corev1.LimitRange]
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	lr := inf.Factory.Core().V1().LimitRanges()
	p := &Plugin{informers: inf, ranges: lr.Lister(), synced: lr.Informer().HasSynced}
	p.live.List = func(ctx context.Context, ns string) ([]*corev1.LimitRange, error) {
		list, err := inf.Client.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]*corev1.LimitRange, len(list.Items))
		for i := range list.Items {
			out[i] = &list.Items[i]
		}
		return out, nil
	}
	return p
}

// applies: creates of pods, and creates and updates of PVCs. A pod's containers cannot
// change after its create, so its updates are not checked, as in Kubernetes.
func applies(a *generic.Attributes) bool {
	switch {
	case admission.Is(a, "pods"):
		return a.Operation == generic.Create
	case admission.Is(a, "persistentvolumeclaims"):
		return a.Operation == generic.Create || a.Operation == generic.Update
	}
	return false
}

func (p *Plugin) limitRanges(ctx context.Context, a *generic.Attributes) ([]*corev1.LimitRange, error) {
	ready, err := p.informers.Wait(ctx, a, p.synced)
	if err != nil || !ready {
		return nil, err
	}
	cached, err := p.ranges.LimitRanges(a.Namespace).List(labels.Everything())
	if err != nil {
		return nil, admission.Forbidden(a, err)
	}
	items, err := p.live.Get(ctx, a.Namespace, cached)
	if err != nil {
		return nil, admission.Forbidden(a, err)
	}
	return items, nil
}

// Admit sets the default requests and limits of the Container limits on every container
// and init container that names none for a resource.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !applies(a) || !ok {
		return nil
	}
	items, err := p.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	// A limit without a request already requests the limit: the API's defaulting of the
	// request came first (generic.Store's trackRequest), as in kube-apiserver, so a
	// defaultRequest does not overtake it.
	for _, lr := range items {
		defaults := defaultRequirements(lr)
		mergeDefaults(pod, &defaults)
	}
	return nil
}

// Validate checks the object against every LimitRange of its namespace; all violations
// are reported together.
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if !applies(a) {
		return nil
	}
	items, err := p.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	var errs []error
	for _, lr := range items {
		switch obj := a.Object.(type) {
		case *corev1.Pod:
			errs = append(errs, validatePod(lr, obj)...)
		case *corev1.PersistentVolumeClaim:
			errs = append(errs, validateClaim(lr, obj)...)
		}
	}
	if len(errs) > 0 {
		return admission.Forbidden(a, utilerrors.NewAggregate(errs))
	}
	return nil
}

// defaultRequirements are the default and defaultRequest of a LimitRange's Container limits.
func defaultRequirements(lr *corev1.LimitRange) corev1.ResourceRequirements {
	req := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, l := range lr.Spec.Limits {
		if l.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range l.DefaultRequest {
			req.Requests[k] = v.DeepCopy()
		}
		for k, v := range l.Default {
			req.Limits[k] = v.DeepCopy()
		}
	}
	return req
}

// mergeDefaults fills what each container leaves unset and records it in the annotation.
func mergeDefaults(pod *corev1.Pod, defaults *corev1.ResourceRequirements) {
	var notes []string
	merge := func(cs []corev1.Container, init bool) {
		for i := range cs {
			c := &cs[i]
			var setRequests, setLimits []string
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			for k, v := range defaults.Limits {
				if _, ok := c.Resources.Limits[k]; !ok {
					c.Resources.Limits[k] = v.DeepCopy()
					setLimits = append(setLimits, string(k))
				}
			}
			for k, v := range defaults.Requests {
				if _, ok := c.Resources.Requests[k]; !ok {
					c.Resources.Requests[k] = v.DeepCopy()
					setRequests = append(setRequests, string(k))
				}
			}
			kind := "container"
			if init {
				kind = "init container"
			}
			if len(setRequests) > 0 {
				sort.Strings(setRequests)
				notes = append(notes, strings.Join(setRequests, ", ")+" request for "+kind+" "+c.Name)
			}
			if len(setLimits) > 0 {
				sort.Strings(setLimits)
				notes = append(notes, strings.Join(setLimits, ", ")+" limit for "+kind+" "+c.Name)
			}
		}
	}
	merge(pod.Spec.Containers, false)
	merge(pod.Spec.InitContainers, true)
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func validatePod(lr *corev1.LimitRange, pod *corev1.Pod) []error {
	var errs []error
	check := func(l corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		kind := string(l.Type)
		for k, v := range l.Min {
			if err := minConstraint(kind, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for k, v := range l.Max {
			if err := maxConstraint(kind, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for k, v := range l.MaxLimitRequestRatio {
			if err := ratioConstraint(kind, string(k), v, requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, l := range lr.Spec.Limits {
		switch l.Type {
		case corev1.LimitTypeContainer:
			for _, c := range pod.Spec.Containers {
				check(l, c.Resources.Requests, c.Resources.Limits)
			}
			for _, c := range pod.Spec.InitContainers {
				check(l, c.Resources.Requests, c.Resources.Limits)
			}
		case corev1.LimitTypePod:
			// The pod's effective requests and limits (init containers run before the others).
			opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
			check(l, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))
		}
	}
	return errs
}

// validateClaim bounds the storage a claim requests (its limits are not user input).
func validateClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) []error {
	var errs []error
	for _, l := range lr.Spec.Limits {
		if l.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(l.Type)
		for k, v := range l.Min {
			if err := minConstraint(kind, string(k), v, pvc.Spec.Resources.Requests, corev1.ResourceList{}); err != nil {
				errs = append(errs, err)
			}
		}
		for k, v := range l.Max {
			if err := maxRequestConstraint(kind, string(k), v, pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// values returns the quantities at a common precision: milli-units when none overflows.
func values(request, limit, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := request.Value(), limit.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return request.MilliValue(), limit.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

// amount is a container's or pod's request or limit of one resource, for a min or max
// constraint: whether it is given, and its value as shown and as compared.
type amount struct {
	name  string // "request" or "limit"
	given bool
	shown resource.Quantity
	value int64
}

// amounts are the request and limit of resource name, and enforced, as compared.
func amounts(name string, enforced resource.Quantity, requests, limits corev1.ResourceList) (req, lim amount, e int64) {
	rq, reqOK := requests[corev1.ResourceName(name)]
	lq, limOK := limits[corev1.ResourceName(name)]
	r, l, e := values(rq, lq, enforced)
	return amount{"request", reqOK, rq, r}, amount{"limit", limOK, lq, l}, e
}

// boundConstraint checks a minimum or maximum (bound) of enforced: required must be given,
// and neither it nor optional (when given) may be beyond it.
func boundConstraint(bound, kind, name string, enforced resource.Quantity, required, optional amount, beyond func(v int64) bool) error {
	switch {
	case !required.given:
		return fmt.Errorf("%s %s usage per %s is %s.  No %s is specified", bound, name, kind, enforced.String(), required.name)
	case beyond(required.value):
		return fmt.Errorf("%s %s usage per %s is %s, but %s is %s", bound, name, kind, enforced.String(), required.name, required.shown.String())
	case optional.given && beyond(optional.value):
		return fmt.Errorf("%s %s usage per %s is %s, but %s is %s", bound, name, kind, enforced.String(), optional.name, optional.shown.String())
	}
	return nil
}

func minConstraint(kind, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, lim, e := amounts(name, enforced, requests, limits)
	return boundConstraint("minimum", kind, name, enforced, req, lim, func(v int64) bool { return v < e })
}

func maxConstraint(kind, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, lim, e := amounts(name, enforced, requests, limits)
	return boundConstraint("maximum", kind, name, enforced, lim, req, func(v int64) bool { return v > e })
}

func maxRequestConstraint(kind, name string, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, _, e := amounts(name, enforced, requests, nil)
	return boundConstraint("maximum", kind, name, enforced, req, amount{}, func(v int64) bool { return v > e })
}

func ratioConstraint(kind, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqOK := requests[corev1.ResourceName(name)]
	lim, limOK := limits[corev1.ResourceName(name)]
	r, l, _ := values(req, lim, enforced)
	if !reqOK || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !limOK || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	shown, max := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		ratio, max = ratio*1000, float64(enforced.MilliValue())
	}
	if ratio > max {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), shown)
	}
	return nil
}
