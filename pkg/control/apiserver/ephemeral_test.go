package apiserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// strategicPatch sends what kubectl debug sends: a strategic merge patch of the pod.
func strategicPatch(t *testing.T, h http.Handler, path, patch string) *httptest.ResponseRecorder {
	t.Helper()
	return patchAs(h, "application/strategic-merge-patch+json", path, patch)
}

// Ephemeral containers come through pods/NAME/ephemeralcontainers only, are validated as
// kube-apiserver does, and once there can be neither changed nor removed.
func TestEphemeralContainersSubresource(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	const sub = "/api/v1/namespaces/default/pods/a/ephemeralcontainers"

	var list metav1.APIResourceList
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1", nil).Body.Bytes(), &list)
	found := false
	for _, r := range list.APIResources {
		if r.Name == "pods/ephemeralcontainers" {
			found = r.Kind == "Pod" && strings.Join(r.Verbs, ",") == "get,patch,update"
		}
	}
	if !found {
		t.Errorf("/api/v1 lists no pods/ephemeralcontainers with get, patch, update")
	}

	withEphemeral := podNamed("b", "web")
	withEphemeral.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", withEphemeral); w.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(w.Body.String(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Errorf("create with ephemeral containers: %d %s", w.Code, w.Body)
	}

	runningPod(t, h, "a", true)
	add := `{"spec":{"ephemeralContainers":[{"name":"dbg","image":"localhost/minik8s/busybox:v1","targetContainerName":"c","stdin":true,"tty":true,"command":["sh"]}]}}`
	w := strategicPatch(t, h, sub, add)
	if w.Code != http.StatusOK {
		t.Fatalf("add an ephemeral container: %d %s", w.Code, w.Body)
	}
	var pod corev1.Pod
	apitest.DecodeStrict(t, do(t, h, "GET", sub, nil).Body.Bytes(), &pod)
	if len(pod.Spec.EphemeralContainers) != 1 || pod.Spec.EphemeralContainers[0].TargetContainerName != "c" ||
		pod.Spec.EphemeralContainers[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Fatalf("the pod's ephemeral containers (defaulted): %+v", pod.Spec.EphemeralContainers)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("the subresource changed the status: phase %q", pod.Status.Phase)
	}

	// Only spec.ephemeralContainers changes through the subresource.
	w = strategicPatch(t, h, sub, `{"metadata":{"labels":{"app":"other"}},"spec":{"activeDeadlineSeconds":5}}`)
	apitest.DecodeStrict(t, w.Body.Bytes(), &pod)
	if w.Code != http.StatusOK || pod.Labels["app"] != "web" || pod.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("a patch of other fields through the subresource: %d, labels %v, activeDeadlineSeconds %v", w.Code, pod.Labels, pod.Spec.ActiveDeadlineSeconds)
	}

	// A strategic merge patch without $setElementOrder puts the new container first.
	refused := []struct{ name, patch, want string }{
		{"changed", `{"spec":{"ephemeralContainers":[{"name":"dbg","image":"busybox:2"}]}}`, `existing ephemeral containers \"dbg\" may not be changed`},
		{"removed", `{"spec":{"$setElementOrder/ephemeralContainers":[],"ephemeralContainers":[{"name":"dbg","$patch":"delete"}]}}`, `existing ephemeral containers \"dbg\" may not be removed`},
		{"duplicate name", `{"spec":{"ephemeralContainers":[{"name":"c","image":"busybox"}]}}`, `spec.ephemeralContainers[0].name: Duplicate value: \"c\"`},
		{"unknown target", `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox","targetContainerName":"nope"}]}}`, `spec.ephemeralContainers[0].targetContainerName: Not found: \"nope\"`},
		{"ports", `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox","ports":[{"containerPort":80}]}]}}`, `spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container`},
		{"probe", `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox","readinessProbe":{"exec":{"command":["true"]}}}]}}`, `spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container`},
		{"resources", `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox","resources":{"limits":{"cpu":"1"}}}]}}`, `spec.ephemeralContainers[0].resources: Forbidden: cannot be set for an Ephemeral Container`},
		{"lifecycle", `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox","lifecycle":{"preStop":{"exec":{"command":["true"]}}}}]}}`, `spec.ephemeralContainers[0].lifecycle: Forbidden: cannot be set for an Ephemeral Container`},
	}
	for _, tc := range refused {
		w := strategicPatch(t, h, sub, tc.patch)
		if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want 422 saying %s", tc.name, w.Code, w.Body, tc.want)
		}
	}

	// The pod itself cannot take them (it says which fields it may change).
	w = strategicPatch(t, h, "/api/v1/namespaces/default/pods/a", `{"spec":{"ephemeralContainers":[{"name":"d3","image":"busybox"}]}}`)
	if w.Code != http.StatusUnprocessableEntity {
		t.Errorf("ephemeral container through the pod: %d %s", w.Code, w.Body)
	}

	// A second one is added beside the first.
	if w := strategicPatch(t, h, sub, `{"spec":{"ephemeralContainers":[{"name":"d2","image":"busybox"}]}}`); w.Code != http.StatusOK {
		t.Fatalf("a second ephemeral container: %d %s", w.Code, w.Body)
	}
	apitest.DecodeStrict(t, do(t, h, "GET", "/api/v1/namespaces/default/pods/a", nil).Body.Bytes(), &pod)
	if len(pod.Spec.EphemeralContainers) != 2 {
		t.Errorf("ephemeral containers after the second: %+v", pod.Spec.EphemeralContainers)
	}
}
