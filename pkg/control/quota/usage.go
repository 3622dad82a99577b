// Package quota evaluates ResourceQuotas: which objects a quota name counts, what they
// use of it and which pods a quota's scopes cover. The resourcequota controller sums it
// over a namespace; the ResourceQuota admission plugin charges one new object with it.
package quota

import (
	"strings"
	"time"

	"github.com/minik8s/minik8s/internal/resourcename"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// objectCounts are the quota names that count objects of a core resource ("pods" and
// "count/pods" alike), as Kubernetes' evaluators do.
var objectCounts = map[corev1.ResourceName]string{
	corev1.ResourcePods:                   "pods",
	corev1.ResourceServices:               "services",
	corev1.ResourceConfigMaps:             "configmaps",
	corev1.ResourceSecrets:                "secrets",
	corev1.ResourcePersistentVolumeClaims: "persistentvolumeclaims",
	corev1.ResourceReplicationControllers: "replicationcontrollers",
	corev1.ResourceQuotas:                 "resourcequotas",
}

// computeNames are the pod resources a quota can name, and whether they sum requests or
// limits of which resource.
var computeNames = map[corev1.ResourceName]struct {
	limits   bool
	resource corev1.ResourceName
}{
	corev1.ResourceCPU:                      {false, corev1.ResourceCPU},
	corev1.ResourceMemory:                   {false, corev1.ResourceMemory},
	corev1.ResourceEphemeralStorage:         {false, corev1.ResourceEphemeralStorage},
	corev1.ResourceRequestsCPU:              {false, corev1.ResourceCPU},
	corev1.ResourceRequestsMemory:           {false, corev1.ResourceMemory},
	corev1.ResourceRequestsEphemeralStorage: {false, corev1.ResourceEphemeralStorage},
	corev1.ResourceLimitsCPU:                {true, corev1.ResourceCPU},
	corev1.ResourceLimitsMemory:             {true, corev1.ResourceMemory},
	corev1.ResourceLimitsEphemeralStorage:   {true, corev1.ResourceEphemeralStorage},
}

// ResourceOf is the group and resource whose objects a quota name is about; ok is false for
// names this controller does not compute (they keep no usage, as with an unknown evaluator).
func ResourceOf(name corev1.ResourceName) (schema.GroupResource, bool) {
	if r, ok := objectCounts[name]; ok {
		return schema.GroupResource{Resource: r}, true
	}
	if _, ok := computeNames[name]; ok {
		return schema.GroupResource{Resource: "pods"}, true
	}
	if _, ok := requestedByPrefix(name); ok {
		return schema.GroupResource{Resource: "pods"}, true
	}
	switch name {
	case corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers:
		return schema.GroupResource{Resource: "services"}, true
	case corev1.ResourceRequestsStorage:
		return schema.GroupResource{Resource: "persistentvolumeclaims"}, true
	}
	if rest, ok := strings.CutPrefix(string(name), "count/"); ok && rest != "" {
		return schema.ParseGroupResource(rest), true
	}
	return schema.GroupResource{}, false
}

// requestedByPrefix is the pod resource whose requests a quota name sums when the name is
// not one of computeNames, as Kubernetes' pod evaluator does: "requests.<name>" of an
// extended resource (example.com/dongle), "hugepages-<size>" and "requests.hugepages-<size>".
func requestedByPrefix(name corev1.ResourceName) (corev1.ResourceName, bool) {
	if resourcename.IsHugePages(name) {
		return name, true
	}
	rest, ok := strings.CutPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(rest, corev1.ResourceHugePagesPrefix) || resourcename.IsExtended(corev1.ResourceName(rest)) {
		return corev1.ResourceName(rest), true
	}
	return "", false
}

// PodCounts says whether a pod uses quota, as kube's QuotaV1Pod: a pod that finished no
// longer does, nor one still terminating a grace period past its deletion time (stuck on a
// lost node, it must not keep its replacement out).
func PodCounts(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		return !time.Now().After(pod.DeletionTimestamp.Add(grace))
	}
	return true
}

// UpdateChangesUsage says an update of an object may change what it uses of quotas, as
// Kubernetes' quota monitor decides which updates to act on: a pod that finishes, a Service
// whose type or node ports change, a claim whose storage request changes. Any other update
// leaves usage as it was.
func UpdateChangesUsage(old, cur any) bool {
	switch o := old.(type) {
	case *corev1.Pod:
		n, ok := cur.(*corev1.Pod)
		return ok && PodCounts(o) != PodCounts(n)
	case *corev1.Service:
		n, ok := cur.(*corev1.Service)
		return ok && (o.Spec.Type != n.Spec.Type || nodePortsOf(o) != nodePortsOf(n))
	case *corev1.PersistentVolumeClaim:
		n, ok := cur.(*corev1.PersistentVolumeClaim)
		return ok && !o.Spec.Resources.Requests.Storage().Equal(*n.Spec.Resources.Requests.Storage())
	}
	return false
}

// Usage is what objects of one group-resource in the namespace use of a quota name.
func Usage(name corev1.ResourceName, gr schema.GroupResource, objs []any, matches func(*corev1.Pod) bool) resource.Quantity {
	// The sum keeps the format of its first term ("128Mi" stays binary), as Kubernetes' quota sums do.
	var sum *resource.Quantity
	add := func(q resource.Quantity) {
		if sum == nil {
			q = q.DeepCopy()
			sum = &q
			return
		}
		sum.Add(q)
	}
	count := func(n int64) { add(*resource.NewQuantity(n, resource.DecimalSI)) }
	total := func() resource.Quantity {
		if sum == nil {
			return resource.Quantity{Format: resource.DecimalSI}
		}
		return *sum
	}
	if gr == (schema.GroupResource{Resource: "pods"}) {
		for _, o := range objs {
			pod, ok := o.(*corev1.Pod)
			if !ok || !PodCounts(pod) || !matches(pod) {
				continue
			}
			if r, ok := requestedByPrefix(name); ok {
				if q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[r]; ok {
					add(q)
				}
				continue
			}
			c, compute := computeNames[name]
			if !compute {
				count(1)
				continue
			}
			list := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			if c.limits {
				list = resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
			}
			if q, ok := list[c.resource]; ok {
				add(q)
			}
		}
		return total()
	}
	for _, o := range objs {
		switch name {
		case corev1.ResourceServicesNodePorts:
			if svc, ok := o.(*corev1.Service); ok {
				count(nodePortsOf(svc))
			}
		case corev1.ResourceServicesLoadBalancers:
			if svc, ok := o.(*corev1.Service); ok && svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				count(1)
			}
		case corev1.ResourceRequestsStorage:
			if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
				if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
					add(q)
				}
			}
		default:
			count(1)
		}
	}
	return total()
}

// nodePortsOf counts a Service's node ports by intent, as Kubernetes' service evaluator
// does: admission sees a Service before its node ports are allocated, so every port of a
// NodePort or LoadBalancer Service counts, except where a LoadBalancer allocates none (then
// only the ports asking for one).
func nodePortsOf(svc *corev1.Service) int64 {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return int64(len(svc.Spec.Ports))
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a == nil || *a {
			return int64(len(svc.Spec.Ports))
		}
		var n int64
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				n++
			}
		}
		return n
	}
	return 0
}
