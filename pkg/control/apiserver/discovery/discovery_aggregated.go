package discovery

import (
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// aggregatedMediaType is the content type of aggregated discovery (one response describes
// every group, version and resource), which kubectl and client-go ask for first.
const aggregatedMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated tells whether the client accepts aggregated discovery v2.
func wantsAggregated(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// serveAggregated answers /api (legacy: true) or /apis with an APIGroupDiscoveryList.
func (d *Handler) serveAggregated(w http.ResponseWriter, legacy bool) {
	list := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	index := map[string]int{}
	resources := sortedResources(d.reg)
	for _, gv := range d.reg.GroupVersions() {
		if (gv.Group == "") != legacy {
			continue
		}
		version := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		if servesBindings(d.reg, gv) { // kube's names no group nor version in its kind
			b := legacyBindings
			version.Resources = append(version.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: b.Name, SingularResource: b.SingularName,
				Scope: apidiscoveryv2.ScopeNamespace, Verbs: b.Verbs, ResponseKind: &metav1.GroupVersionKind{Kind: b.Kind}})
		}
		for _, res := range resources {
			if res.GroupVersion() == gv {
				version.Resources = append(version.Resources, resourceDiscovery(res))
			}
		}
		i, ok := index[gv.Group]
		if !ok {
			i = len(list.Items)
			index[gv.Group] = i
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
		}
		list.Items[i].Versions = append(list.Items[i].Versions, version)
	}
	if !legacy {
		list.Items = append(list.Items, d.extraDiscovery()...)
		slices.SortStableFunc(list.Items, func(a, b apidiscoveryv2.APIGroupDiscovery) int { return compareGroups(a.Name, b.Name) })
	}
	w.Header().Set("Content-Type", aggregatedMediaType)
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(list)
}

// resourceDiscovery is the aggregated form of the same entries legacy discovery serves.
func resourceDiscovery(res *registry.Resource) apidiscoveryv2.APIResourceDiscovery {
	entries := apiResources(res)
	main := entries[0]
	scope := apidiscoveryv2.ScopeCluster
	if main.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	// A built-in kind names a group and version only when they are another's (a Scale's),
	// as kube-apiserver's; apiextensions-apiserver names a custom resource's always.
	var own schema.GroupVersion
	if registry.IsCustom(res.GVK()) {
		own = res.GroupVersion()
	}
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource: main.Name, SingularResource: main.SingularName, Scope: scope, Verbs: main.Verbs,
		ShortNames: main.ShortNames, Categories: main.Categories,
		ResponseKind: &metav1.GroupVersionKind{Group: own.Group, Version: own.Version, Kind: main.Kind},
	}
	for _, sub := range entries[1:] {
		kind := &metav1.GroupVersionKind{Group: own.Group, Version: own.Version, Kind: sub.Kind}
		if sub.Group != "" || sub.Version != "" {
			kind.Group, kind.Version = sub.Group, sub.Version
		}
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: strings.TrimPrefix(sub.Name, main.Name+"/"), ResponseKind: kind, Verbs: sub.Verbs,
		})
	}
	return out
}

// extraDiscovery are the aggregated discovery entries of the group versions served outside
// the registry.
func (d *Handler) extraDiscovery() []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, e := range d.extra {
		v := apidiscoveryv2.APIVersionDiscovery{Version: e.gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range e.resources {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, SingularResource: r.SingularName, Scope: scope,
				Verbs: r.Verbs, ResponseKind: &metav1.GroupVersionKind{Kind: r.Kind}})
		}
		out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: e.gv.Group}, Versions: []apidiscoveryv2.APIVersionDiscovery{v}})
	}
	return out
}
