package discovery

import (
	"encoding/json"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
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
	want := "apps authorization.k8s.io autoscaling batch example.com metrics.k8s.io"

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
