// Package resourcequota is Kubernetes' ResourceQuota admission plugin: a create that would
// take a namespace's usage past a quota's hard limits is refused ("exceeded quota: q,
// requested: pods=1, used: pods=2, limited: pods=2"), a pod that leaves out a compute
// resource its quota limits is refused ("must specify limits.cpu for: c"), and an admitted
// create is charged into the quota's status.used at once, with the quota's
// resourceVersion as precondition, so concurrent creates cannot both take the last unit.
// The resourcequota controller recomputes status.used from the objects afterwards.
package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/quota"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// maxAttempts bounds the re-reads after a conflicting status write.
const maxAttempts = 5

// Plugin reads quotas from the shared informer (live after a conflict) and charges them
// through the API. Creates in one namespace that use some quota are charged one at a
// time; the others pass without waiting.
type Plugin struct {
	informers *admission.Informers
	quotas    corelisters.ResourceQuotaLister
	synced    func() bool
	live      admission.LiveLookup[*corev1.ResourceQuota]

	mu    sync.Mutex
	locks map[string]*nsLock
}

type nsLock struct {
	sync.Mutex
	users int
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	rq := inf.Factory.Core().V1().ResourceQuotas()
	p := &Plugin{informers: inf, quotas: rq.Lister(), synced: rq.Informer().HasSynced, locks: map[string]*nsLock{}}
	p.live.List = p.list
	return p
}

func (p *Plugin) list(ctx context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	list, err := p.informers.Client.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.ResourceQuota, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// lock serializes the evaluations of one namespace; unlock releases it.
func (p *Plugin) lock(ns string) (unlock func()) {
	p.mu.Lock()
	l := p.locks[ns]
	if l == nil {
		l = &nsLock{}
		p.locks[ns] = l
	}
	l.users++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.users--; l.users == 0 {
			delete(p.locks, ns)
		}
		p.mu.Unlock()
	}
}

// Validate checks and charges a create of a namespaced object (not of a subresource).
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	if a.Operation != generic.Create || a.Subresource != "" || !a.Resource.Namespaced || a.Object == nil {
		return nil
	}
	ready, err := p.informers.Wait(ctx, a, p.synced)
	if err != nil || !ready {
		return err
	}
	cached, err := p.quotas.ResourceQuotas(a.Namespace).List(labels.Everything())
	if err == nil {
		cached, err = p.live.Get(ctx, a.Namespace, cached)
	}
	if err != nil {
		return admission.Forbidden(a, err)
	}
	updated, err := Check(a, cached)
	if err != nil || len(updated) == 0 || a.DryRun {
		return err // refused, or nothing to charge: no need to wait for the namespace's lock
	}
	unlock := p.lock(a.Namespace)
	defer unlock()
	charged := sets.New[string]() // quotas written by an earlier attempt
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 { // the cache is behind a status write: read the quotas as they are
			quotas, err := p.list(ctx, a.Namespace)
			if err != nil {
				return admission.Forbidden(a, err)
			}
			quotas = slices.DeleteFunc(quotas, func(q *corev1.ResourceQuota) bool { return charged.Has(q.Name) })
			if updated, err = Check(a, quotas); err != nil {
				return err
			}
		}
		conflict := false
		for _, q := range updated {
			_, err := p.informers.Client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				conflict = true
				continue
			}
			if err != nil {
				return admission.Forbidden(a, fmt.Errorf("unable to update status of quota %s: %w", q.Name, err))
			}
			charged.Insert(q.Name)
		}
		if !conflict {
			return nil
		}
	}
	return admission.Forbidden(a, errors.New("unable to charge the quotas of the namespace: too many concurrent changes, please try again"))
}

// computeNames are the quota names that oblige every container of a pod to state the
// resource (Kubernetes' backward-compatible rule for cpu and memory).
var computeNames = sets.New[corev1.ResourceName](corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory)

// Check evaluates the object of a create against quotas, as kube-apiserver's quota
// evaluator does, and returns copies of the quotas it uses with the new usage in
// status.used (none when it uses nothing any of them limit).
func Check(a *generic.Attributes, quotas []*corev1.ResourceQuota) ([]*corev1.ResourceQuota, error) {
	gr := a.Resource.GroupResource()
	pod, _ := a.Object.(*corev1.Pod)
	type pertinent struct {
		q     *corev1.ResourceQuota
		names []corev1.ResourceName // the hard names that count this object
		delta corev1.ResourceList
	}
	var use []pertinent
	for _, q := range quotas {
		reqs := quota.ScopeRequirements(q)
		if len(reqs) > 0 && (pod == nil || !quota.PodMatches(reqs, pod)) {
			continue // scopes cover only pods
		}
		var names []corev1.ResourceName
		for name := range q.Status.Hard {
			if g, ok := quota.ResourceOf(name); ok && g == gr {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
		if pod != nil {
			if err := constraints(names, pod); err != nil {
				return nil, admission.Forbidden(a, fmt.Errorf("failed quota: %s: %w", q.Name, err))
			}
		}
		var unknown []string
		for _, n := range names {
			if _, ok := q.Status.Used[n]; !ok {
				unknown = append(unknown, string(n))
			}
		}
		if len(unknown) > 0 {
			return nil, admission.Forbidden(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ",")))
		}
		matches := func(p *corev1.Pod) bool { return quota.PodMatches(reqs, p) }
		delta := corev1.ResourceList{}
		for _, n := range names {
			if u := quota.Usage(n, gr, []any{a.Object}, matches); !u.IsZero() {
				if u.Sign() < 0 {
					return nil, admission.Forbidden(a, fmt.Errorf("quota usage is negative for resource(s): %s", n))
				}
				delta[n] = u
			}
		}
		if len(delta) > 0 {
			use = append(use, pertinent{q, names, delta})
		}
	}
	var out []*corev1.ResourceQuota
	for _, u := range use {
		q := u.q.DeepCopy()
		exceeded := corev1.ResourceList{}
		for n, d := range u.delta {
			used := q.Status.Used[n].DeepCopy()
			used.Add(d)
			if hard := q.Status.Hard[n]; used.Cmp(hard) > 0 {
				exceeded[n] = d
			}
			q.Status.Used[n] = used
		}
		if len(exceeded) > 0 {
			used, hard := corev1.ResourceList{}, corev1.ResourceList{}
			for n := range exceeded {
				used[n], hard[n] = u.q.Status.Used[n], u.q.Status.Hard[n]
			}
			return nil, admission.Forbidden(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s",
				q.Name, prettyPrint(exceeded), prettyPrint(used), prettyPrint(hard)))
		}
		out = append(out, q)
	}
	return out, nil
}

// constraints: when a quota limits cpu or memory, every container must state it (its
// request for cpu, memory and requests.*, its limit for limits.*).
func constraints(names []corev1.ResourceName, pod *corev1.Pod) error {
	required := sets.New(names...).Intersection(computeNames)
	if required.Len() == 0 {
		return nil
	}
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		stated := sets.New[corev1.ResourceName]()
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; ok {
				stated.Insert(r, corev1.ResourceName("requests."+r))
			}
			if _, ok := c.Resources.Limits[r]; ok {
				stated.Insert(corev1.ResourceName("limits." + r))
			}
		}
		for r := range required.Difference(stated) {
			if missing[r] == nil {
				missing[r] = sets.New[string]()
			}
			missing[r].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, r := range sets.List(sets.KeySet(missing)) {
		msgs = append(msgs, fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[r]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// prettyPrint is name=quantity pairs in name order, as Kubernetes prints them.
func prettyPrint(list corev1.ResourceList) string {
	keys := make([]string, 0, len(list))
	for k := range list {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := list[corev1.ResourceName(k)]
		parts[i] = k + "=" + v.String()
	}
	return strings.Join(parts, ",")
}
