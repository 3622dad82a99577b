package discovery

import (
	"cmp"
	"math"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Priority orders a group among groups and a version within its group in discovery, as an
// APIService's groupPriorityMinimum and versionPriority do.
type Priority struct{ Group, Version int32 }

// BuiltinPriorities are kube-apiserver's (cmd/kube-apiserver/app/aggregator.go and
// pkg/controlplane/apiserver/aggregator.go), for the group versions miniapi serves, and
// metrics-server's own APIService's for metrics.k8s.io, which miniapi serves itself.
var BuiltinPriorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "metrics.k8s.io", Version: "v1beta1"}:          {100, 100},
}

// CustomResourcePriority is what kube-apiserver's crdregistration gives the versions of
// CustomResourceDefinitions: every group without a built-in priority here.
var CustomResourcePriority = Priority{Group: 1000, Version: 100}

// aggregatorGroup is kube-aggregator's own group, which it lists before every other.
const aggregatorGroup = "apiregistration.k8s.io"

// groupPriority is a group's priority among groups: the highest of its versions'.
func groupPriority(group string) int32 {
	if group == aggregatorGroup {
		return math.MaxInt32
	}
	p, found := int32(0), false
	for gv, prio := range BuiltinPriorities {
		if gv.Group == group {
			p, found = max(p, prio.Group), true
		}
	}
	if !found {
		return CustomResourcePriority.Group
	}
	return p
}

// compareGroups orders groups as kube-aggregator lists them in /apis: the highest priority
// first, then by name.
func compareGroups(a, b string) int {
	return cmp.Or(cmp.Compare(groupPriority(b), groupPriority(a)), cmp.Compare(a, b))
}
