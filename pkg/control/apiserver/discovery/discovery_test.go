package discovery

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// TestVersionCarriesTheBuildsCommit: kubectl version -o yaml shows the commit, tree state and
// date of the build as kube-apiserver's (stamped there by ldflags, here by go build's VCS
// settings); a binary built without them (go test's) leaves the fields empty.
func TestVersionCarriesTheBuildsCommit(t *testing.T) {
	var info version.Info
	stampBuild(&info, []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e48c52a0123456789abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-11-30T12:34:56Z"}, {Key: "vcs.modified", Value: "true"},
	})
	want := version.Info{GitCommit: "e48c52a0123456789abcdef0123456789abcdef0", GitTreeState: "dirty", BuildDate: "2026-11-30T12:34:56Z"}
	if info != want {
		t.Errorf("stamped %#v, want %#v", info, want)
	}
	info = version.Info{}
	stampBuild(&info, []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}})
	if info.GitCommit != "abc" || info.GitTreeState != "clean" {
		t.Errorf("clean tree: %#v", info)
	}
	info = version.Info{}
	stampBuild(&info, nil)
	if info != (version.Info{}) {
		t.Errorf("no VCS settings: %#v", info)
	}
}

// Groups come in kube-aggregator's order (priority, then name; custom resources' groups at
// 1000, metrics.k8s.io last) and a version's resources by name, as kube-apiserver lists
// them: what orders `kubectl get all` and `kubectl api-resources`.
func TestDiscoveryOrderAsKubeAPIServer(t *testing.T) {
	reg, err := registry.New(
		registry.NewResource(batchv1.SchemeGroupVersion, "jobs", "Job", true, registry.Rules{}, nil, []string{"all"}, "status"),
		registry.NewResource(batchv1.SchemeGroupVersion, "cronjobs", "CronJob", true, registry.Rules{}, []string{"cj"}, []string{"all"}, "status"),
		registry.NewResource(autoscalingv2.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, registry.Rules{}, nil, []string{"all"}, "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "deployments", "Deployment", true, registry.Rules{}, nil, []string{"all"}),
		registry.NewResource(corev1.SchemeGroupVersion, "pods", "Pod", true, registry.Rules{}, nil, []string{"all"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	d := New(reg)
	d.AddGroupVersion(schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}, []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "PodMetrics"}})
	d.AddGroupVersion(schema.GroupVersion{Group: "example.com", Version: "v1"}, []metav1.APIResource{{Name: "widgets", Namespaced: true, Kind: "Widget"}})
	d.AddGroupVersion(schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, []metav1.APIResource{{Name: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview"}})
	d.AddGroupVersion(schema.GroupVersion{Group: "apiregistration.k8s.io", Version: "v1"}, []metav1.APIResource{{Name: "apiservices", Kind: "APIService"}})
	// kube-aggregator lists its own group first.
	want := "apiregistration.k8s.io apps authorization.k8s.io autoscaling batch example.com metrics.k8s.io"

	rec := httptest.NewRecorder()
	d.ServeGroups(rec, httptest.NewRequest("GET", "/apis", nil))
	var groups metav1.APIGroupList
	if err := json.Unmarshal(rec.Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	if got := strings.Join(names, " "); got != want {
		t.Errorf("/apis groups: %s, want %s", got, want)
	}

	rec = httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/apis", nil)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	d.ServeGroups(rec, req)
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &agg); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, g := range agg.Items {
		names = append(names, g.Name)
		if g.Name == "batch" {
			if r := g.Versions[0].Resources; len(r) != 2 || r[0].Resource != "cronjobs" || r[1].Resource != "jobs" {
				t.Errorf("aggregated batch/v1 resources: %+v, want cronjobs then jobs", r)
			}
		}
	}
	if got := strings.Join(names, " "); got != want {
		t.Errorf("aggregated /apis groups: %s, want %s", got, want)
	}

	rec = httptest.NewRecorder()
	d.ServeResourceList(rec, httptest.NewRequest("GET", "/apis/batch/v1", nil), batchv1.SchemeGroupVersion)
	var list metav1.APIResourceList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "cronjobs cronjobs/status jobs jobs/status" {
		t.Errorf("/apis/batch/v1 resources: %s", got)
	}
}

// Core v1's discovery lists what kube-apiserver 1.36.3 lists (its /api/v1, recorded side by
// side): every subresource, those served outside the registry too (a pod's log, exec,
// attach, port-forward and proxy, a node's and a service's proxy, a service account's
// token), in the order of their paths. The aggregated form names no group or version in a
// built-in kind unless another's (Scale, Eviction, TokenRequest).
func TestCoreV1AsKubeAPIServer(t *testing.T) {
	const kube = `bindings Binding / create
componentstatuses ComponentStatus / get,list
configmaps ConfigMap / create,delete,deletecollection,get,list,patch,update,watch
endpoints Endpoints / create,delete,deletecollection,get,list,patch,update,watch
events Event / create,delete,deletecollection,get,list,patch,update,watch
limitranges LimitRange / create,delete,deletecollection,get,list,patch,update,watch
namespaces Namespace / create,delete,get,list,patch,update,watch
namespaces/finalize Namespace / update
namespaces/status Namespace / get,patch,update
nodes Node / create,delete,deletecollection,get,list,patch,update,watch
nodes/proxy NodeProxyOptions / create,delete,get,patch,update
nodes/status Node / get,patch,update
persistentvolumeclaims PersistentVolumeClaim / create,delete,deletecollection,get,list,patch,update,watch
persistentvolumeclaims/status PersistentVolumeClaim / get,patch,update
persistentvolumes PersistentVolume / create,delete,deletecollection,get,list,patch,update,watch
persistentvolumes/status PersistentVolume / get,patch,update
pods Pod / create,delete,deletecollection,get,list,patch,update,watch
pods/attach PodAttachOptions / create,get
pods/binding Binding / create
pods/ephemeralcontainers Pod / get,patch,update
pods/eviction Eviction policy/v1 create
pods/exec PodExecOptions / create,get
pods/log Pod / get
pods/portforward PodPortForwardOptions / create,get
pods/proxy PodProxyOptions / create,delete,get,patch,update
pods/resize Pod / get,patch,update
pods/status Pod / get,patch,update
podtemplates PodTemplate / create,delete,deletecollection,get,list,patch,update,watch
replicationcontrollers ReplicationController / create,delete,deletecollection,get,list,patch,update,watch
replicationcontrollers/scale Scale autoscaling/v1 get,patch,update
replicationcontrollers/status ReplicationController / get,patch,update
resourcequotas ResourceQuota / create,delete,deletecollection,get,list,patch,update,watch
resourcequotas/status ResourceQuota / get,patch,update
secrets Secret / create,delete,deletecollection,get,list,patch,update,watch
serviceaccounts ServiceAccount / create,delete,deletecollection,get,list,patch,update,watch
serviceaccounts/token TokenRequest authentication.k8s.io/v1 create
services Service / create,delete,deletecollection,get,list,patch,update,watch
services/proxy ServiceProxyOptions / create,delete,get,patch,update
services/status Service / get,patch,update`
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	d := New(reg)
	rec := httptest.NewRecorder()
	d.ServeResourceList(rec, httptest.NewRequest("GET", "/api/v1", nil), corev1.SchemeGroupVersion)
	var list metav1.APIResourceList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list.APIResources {
		got = append(got, fmt.Sprintf("%s %s %s/%s %s", r.Name, r.Kind, r.Group, r.Version, strings.Join(r.Verbs, ",")))
	}
	if g := strings.Join(got, "\n"); g != kube {
		t.Errorf("/api/v1:\n%s\nwant kube-apiserver's:\n%s", g, kube)
	}

	rec = httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api", nil)
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	d.ServeLegacyVersions(rec, req)
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(rec.Body.Bytes(), &agg); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, r := range agg.Items[0].Versions[0].Resources {
		if r.Resource != "pods" && r.Resource != "serviceaccounts" {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s/%s/%s", r.Resource, r.ResponseKind.Group, r.ResponseKind.Version, r.ResponseKind.Kind))
		for _, s := range r.Subresources {
			got = append(got, fmt.Sprintf("%s/%s %s/%s/%s", r.Resource, s.Subresource, s.ResponseKind.Group, s.ResponseKind.Version, s.ResponseKind.Kind))
		}
	}
	want := []string{"pods //Pod", "pods/attach //PodAttachOptions", "pods/binding //Binding", "pods/ephemeralcontainers //Pod",
		"pods/eviction policy/v1/Eviction", "pods/exec //PodExecOptions", "pods/log //Pod", "pods/portforward //PodPortForwardOptions",
		"pods/proxy //PodProxyOptions", "pods/resize //Pod", "pods/status //Pod",
		"serviceaccounts //ServiceAccount", "serviceaccounts/token authentication.k8s.io/v1/TokenRequest"}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("aggregated /api pods and serviceaccounts:\n%s\nwant:\n%s", g, w)
	}
}

// storageVersionHash names the version a resource's objects are stored at, as kube-apiserver
// gives it (the values below are its 1.36.3's): autoscaling/v1 HorizontalPodAutoscalers are
// stored as v2, events.k8s.io Events as core ones; a resource not stored has none.
func TestStorageVersionHashAsKubeAPIServer(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	d := New(reg)
	for _, tc := range []struct {
		gv             schema.GroupVersion
		resource, hash string
	}{
		{corev1.SchemeGroupVersion, "pods", "xPOwRZ+Yhw8="},
		{corev1.SchemeGroupVersion, "componentstatuses", ""},
		{schema.GroupVersion{Group: "autoscaling", Version: "v1"}, "horizontalpodautoscalers", "qwQve8ut294="},
		{schema.GroupVersion{Group: "events.k8s.io", Version: "v1"}, "events", "r2yiGXH7wu8="},
		{appsv1.SchemeGroupVersion, "deployments", "8aSe+NMegvE="},
	} {
		rec := httptest.NewRecorder()
		d.ServeResourceList(rec, httptest.NewRequest("GET", "/", nil), tc.gv)
		var list metav1.APIResourceList
		if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == tc.resource })
		if i < 0 || list.APIResources[i].StorageVersionHash != tc.hash {
			t.Errorf("%s %s: %s, want storageVersionHash %q", tc.gv, tc.resource, rec.Body, tc.hash)
		}
	}
}
