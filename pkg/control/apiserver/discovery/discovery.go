// Package discovery serves what clients learn the API from: /version, and the groups,
// versions and resources served, in legacy discovery (/api, /apis, /apis/GROUP and each
// version's resource list) and aggregated discovery v2, as k8s.io/apiserver's
// pkg/endpoints/discovery.
package discovery

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"

	apidiscovery "k8s.io/apiserver/pkg/endpoints/discovery"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// KubernetesVersion is the Kubernetes API level miniapi reports on /version.
const KubernetesVersion = "v1.32.0"

// ServeVersion answers /version.
func ServeVersion(w http.ResponseWriter, _ *http.Request) {
	// As kube-apiserver's effective version: it emulates the API level it serves, and is
	// compatible with the minor before it.
	v := utilversion.MustParseSemantic(KubernetesVersion)
	major, minor := strconv.Itoa(int(v.Major())), strconv.Itoa(int(v.Minor()))
	info := version.Info{
		Major: major, Minor: minor, GitVersion: KubernetesVersion + "-minik8s",
		EmulationMajor: major, EmulationMinor: minor,
		MinCompatibilityMajor: major, MinCompatibilityMinor: strconv.Itoa(int(v.Minor()) - 1),
		GoVersion: runtime.Version(), Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if build, ok := debug.ReadBuildInfo(); ok {
		stampBuild(&info, build.Settings)
	}
	// Indented for every client, as kube-apiserver's version handler writes it (WriteRawJSON).
	body, _ := json.MarshalIndent(info, "", "  ") // a version.Info always encodes
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body) // the client going away mid-body is not ours to report
}

// stampBuild fills what kube-apiserver's build stamps through ldflags (gitCommit,
// gitTreeState, buildDate) from the VCS settings go build records in a binary built in a git
// checkout; buildDate is the commit's time, which a rebuild of the same tree keeps.
func stampBuild(info *version.Info, settings []debug.BuildSetting) {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			info.GitCommit = s.Value
		case "vcs.time":
			info.BuildDate = s.Value
		case "vcs.modified":
			info.GitTreeState = map[string]string{"true": "dirty", "false": "clean"}[s.Value]
		}
	}
}

// Handler serves the discovery documents of the registry's resources and of the group
// versions served beside them (AddGroupVersion).
type Handler struct {
	reg *registry.Registry
	// extra are the group versions served outside the registry.
	extra []extraGroupVersion
}

// extraGroupVersion is a group version served outside the registry, with its resources.
type extraGroupVersion struct {
	gv        schema.GroupVersion
	resources []metav1.APIResource
}

// New is the discovery of reg's resources.
func New(reg *registry.Registry) *Handler { return &Handler{reg: reg} }

// AddGroupVersion lists gv and its resources, served outside the registry (the API
// server's extensions), after the registry's groups; call it before serving.
func (d *Handler) AddGroupVersion(gv schema.GroupVersion, resources []metav1.APIResource) {
	d.extra = append(d.extra, extraGroupVersion{gv: gv, resources: resources})
}

// ServeLegacyVersions answers /api: the legacy group's versions, or its aggregated discovery.
func (d *Handler) ServeLegacyVersions(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		d.serveAggregated(w, true)
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
}

func (d *Handler) apiGroups() []metav1.APIGroup {
	var groups []metav1.APIGroup
	index := map[string]int{}
	for _, gv := range d.reg.GroupVersions() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if i, ok := index[gv.Group]; ok {
			groups[i].Versions = append(groups[i].Versions, v)
			continue
		}
		index[gv.Group] = len(groups)
		groups = append(groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	groups = append(groups, d.extraGroups()...)
	slices.SortStableFunc(groups, func(a, b metav1.APIGroup) int { return compareGroups(a.Name, b.Name) })
	return groups
}

// extraGroups are the entries of /apis of the group versions served outside the registry.
func (d *Handler) extraGroups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, e := range d.extra {
		v := metav1.GroupVersionForDiscovery{GroupVersion: e.gv.String(), Version: e.gv.Version}
		out = append(out, metav1.APIGroup{Name: e.gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// ServeGroups answers /apis: the named groups, or their aggregated discovery.
func (d *Handler) ServeGroups(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		d.serveAggregated(w, false)
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   d.apiGroups(),
	})
}

// ServeGroup answers /apis/GROUP.
func (d *Handler) ServeGroup(w http.ResponseWriter, r *http.Request, name string) {
	for _, g := range d.apiGroups() {
		if g.Name == name {
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			responsewriters.WriteJSON(w, http.StatusOK, g)
			return
		}
	}
	d.notServed(w, r, name)
}

// NotServed is kube-apiserver's 404 for a path under a built-in group that nothing serves
// (a version or resource the group does not have): go-restful's answer for a route its
// group version lacks. kubectl prints `Error from server (NotFound): the server could not
// find the requested resource`.
func NotServed() *apierrors.StatusError {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

// ErrPageNotFound is kube-apiserver's 404 for a path under any other group (one only CRDs
// serve, or none), which apiextensions-apiserver hands on to the last handler:
// http.NotFound's plain "404 page not found". client-go makes of it "the server could not
// find the requested resource (get RESOURCE.GROUP)".
var ErrPageNotFound = errors.New("404 page not found")

// NotServedIn is the 404 of a path under group that nothing serves: NotServed under a
// built-in group, ErrPageNotFound under another.
func NotServedIn(reg *registry.Registry, group string) error {
	if reg.ServesBuiltIn(group) {
		return NotServed()
	}
	return ErrPageNotFound
}

// WriteError writes err, ErrPageNotFound as http.NotFound does.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrPageNotFound) {
		http.NotFound(w, r)
		return
	}
	responsewriters.WriteError(w, err)
}

func (d *Handler) notServed(w http.ResponseWriter, r *http.Request, group string) {
	WriteError(w, r, NotServedIn(d.reg, group))
}

// ServeResourceList answers /api/VERSION and /apis/GROUP/VERSION: the version's resources.
func (d *Handler) ServeResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	if servesBindings(d.reg, gv) {
		list.APIResources = append(list.APIResources, legacyBindings)
	}
	for _, res := range sortedResources(d.reg) {
		if res.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, apiResources(res)...)
	}
	if list.APIResources == nil {
		d.notServed(w, r, gv.Group)
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, list)
}

// legacyBindings is core v1's bindings: kube-apiserver serves POST of a Binding there as
// pods/NAME/binding (the pod named by the Binding), and lists it first in /api/v1.
var legacyBindings = metav1.APIResource{Name: "bindings", SingularName: "binding", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}}

// IsLegacyBindings tells whether gvr is core v1's bindings.
func IsLegacyBindings(gvr schema.GroupVersionResource) bool {
	return gvr == corev1.SchemeGroupVersion.WithResource(legacyBindings.Name)
}

// servesBindings tells whether reg serves pods/binding in gv, and so the bindings before it.
func servesBindings(reg *registry.Registry, gv schema.GroupVersion) bool {
	pods, ok := reg.Lookup(gv.WithResource("pods"))
	return ok && gv == corev1.SchemeGroupVersion && pods.HasSubresource("binding")
}

// sortedResources are reg's resources by name, the order kube-apiserver lists a version's
// resources in (its installer sorts their paths).
func sortedResources(reg *registry.Registry) []*registry.Resource {
	return slices.SortedStableFunc(slices.Values(reg.Resources()), func(a, b *registry.Resource) int {
		return cmp.Compare(a.Resource, b.Resource)
	})
}

// computedVerbs are the verbs of a resource made at each read instead of stored.
var computedVerbs = metav1.Verbs{"get", "list"}

// apiResources is the discovery entry of a resource and of each of its subresources.
func apiResources(res *registry.Resource) []metav1.APIResource {
	out := []metav1.APIResource{{
		Name: res.Resource, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.Kind,
		Verbs:      metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		ShortNames: res.ShortNames, Categories: res.Categories,
	}}
	if res.Computed == nil {
		out[0].StorageVersionHash = storageVersionHash(res)
	}
	switch {
	case res.Computed != nil:
		out[0].Verbs = computedVerbs
	case res.Terminating:
		out[0].Verbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}
	case registry.IsCustom(res.GVK()):
		// apiextensions-apiserver's discovery controller lists them in this order.
		out[0].Verbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	case res.Rules.NoDeleteCollection:
		out[0].Verbs = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	}
	for _, sub := range res.Subresources {
		entry := metav1.APIResource{Name: res.Resource + "/" + sub, Namespaced: res.Namespaced, Kind: res.Kind}
		switch sub {
		case "binding":
			entry.Kind, entry.Verbs = "Binding", metav1.Verbs{"create"}
		case "eviction": // kubectl drain finds the Eviction's group and version here
			entry.Group, entry.Version, entry.Kind = "policy", "v1", "Eviction"
			entry.Verbs = metav1.Verbs{"create"}
		case "finalize":
			entry.Verbs = metav1.Verbs{"update"}
		case "scale":
			entry.Group, entry.Version, entry.Kind = "autoscaling", "v1", "Scale"
			entry.Verbs = metav1.Verbs{"get", "patch", "update"}
		default:
			entry.Verbs = metav1.Verbs{"get", "patch", "update"}
		}
		out = append(out, entry)
	}
	if res.GroupVersion() == corev1.SchemeGroupVersion {
		out = append(out, servedOutside[res.Resource]...)
	}
	// Sorted by path, as kube-apiserver's installer lists them.
	slices.SortStableFunc(out[1:], func(a, b metav1.APIResource) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// storageVersionHash names the version res's objects are stored at (another's, for a
// resource converted on every read and write), as kube-apiserver's discovery does.
func storageVersionHash(res *registry.Resource) string {
	stored := res.GVK()
	if res.Conversion != nil {
		stored = res.Conversion.Storage.GVK()
	}
	return apidiscovery.StorageVersionHash(stored.Group, stored.Version, stored.Kind)
}

// servedOutside are the core v1 subresources the API server serves with handlers of their
// own, not the registry's: the node connections (package connect: a pod's log, exec,
// attach, port-forward and proxy, a node's and a service's proxy) and TokenRequest.
var servedOutside = map[string][]metav1.APIResource{
	"pods": {
		{Name: "pods/attach", Namespaced: true, Kind: "PodAttachOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/exec", Namespaced: true, Kind: "PodExecOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get"}},
		{Name: "pods/portforward", Namespaced: true, Kind: "PodPortForwardOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/proxy", Namespaced: true, Kind: "PodProxyOptions", Verbs: proxyVerbs},
	},
	"nodes":    {{Name: "nodes/proxy", Kind: "NodeProxyOptions", Verbs: proxyVerbs}},
	"services": {{Name: "services/proxy", Namespaced: true, Kind: "ServiceProxyOptions", Verbs: proxyVerbs}},
	"serviceaccounts": {{Name: "serviceaccounts/token", Namespaced: true, Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest",
		Verbs: metav1.Verbs{"create"}}},
}

var proxyVerbs = metav1.Verbs{"create", "delete", "get", "patch", "update"}
