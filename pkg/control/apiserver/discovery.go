package apiserver

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// KubernetesVersion is the Kubernetes API level miniapi reports on /version.
const KubernetesVersion = "v1.32.0"

func serveVersion(w http.ResponseWriter, _ *http.Request) {
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
	responsewriters.WriteJSON(w, http.StatusOK, info)
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

func (s *Server) serveLegacyVersions(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.serveAggregated(w, true)
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

func (s *Server) apiGroups() []metav1.APIGroup {
	var groups []metav1.APIGroup
	index := map[string]int{}
	for _, gv := range s.reg.GroupVersions() {
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
	return append(groups, s.extensionGroups()...)
}

func (s *Server) serveGroups(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.serveAggregated(w, false)
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   s.apiGroups(),
	})
}

func (s *Server) serveGroup(w http.ResponseWriter, _ *http.Request, name string) {
	for _, g := range s.apiGroups() {
		if g.Name == name {
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			responsewriters.WriteJSON(w, http.StatusOK, g)
			return
		}
	}
	responsewriters.WriteError(w, notServed())
}

// notServed is kube-apiserver's 404 for a path nothing serves (a group, version or
// resource it does not have): go-restful's answer for a route its group version lacks, and
// what client-go makes of the plain "404 page not found" of the others. kubectl prints
// `Error from server (NotFound): the server could not find the requested resource`.
func notServed() *apierrors.StatusError {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

func (s *Server) serveResourceList(w http.ResponseWriter, _ *http.Request, gv schema.GroupVersion) {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range s.reg.Resources() {
		if res.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, apiResources(res)...)
	}
	if list.APIResources == nil {
		responsewriters.WriteError(w, notServed())
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, list)
}

// apiResources is the discovery entry of a resource and of each of its subresources.
func apiResources(res *registry.Resource) []metav1.APIResource {
	out := []metav1.APIResource{{
		Name: res.Resource, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.Kind,
		Verbs:      metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		ShortNames: res.ShortNames, Categories: res.Categories,
	}}
	switch {
	case res.Computed != nil:
		out[0].Verbs = computedVerbs
	case res.Terminating:
		out[0].Verbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}
	case isCustom(res.GVK()):
		// apiextensions-apiserver's discovery controller lists them in this order.
		out[0].Verbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
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
	return out
}
