package limitranger

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/poddefaults"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers}}
}

func start(t *testing.T, ranges ...*corev1.LimitRange) *Plugin {
	return admissiontest.Started(t, New, ranges...)
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func TestDefaultsAndAnnotation(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Default: admissiontest.ResourceList("cpu", "500m", "memory", "128Mi"), DefaultRequest: admissiontest.ResourceList("cpu", "100m"),
	}}}}
	p := start(t, lr)
	pd := pod("web", corev1.Container{Name: "app"}, corev1.Container{Name: "side", Resources: corev1.ResourceRequirements{Limits: admissiontest.ResourceList("cpu", "2")}})
	poddefaults.Pod(pd) // the request's defaulting, which comes before admission
	if err := p.Admit(context.Background(), admissiontest.Attrs(t, generic.Create, podsGVR, "", pd, nil)); err != nil {
		t.Fatal(err)
	}
	app, side := pd.Spec.Containers[0].Resources, pd.Spec.Containers[1].Resources
	if app.Limits.Cpu().String() != "500m" || app.Limits.Memory().String() != "128Mi" || app.Requests.Cpu().String() != "100m" {
		t.Errorf("app: %+v", app)
	}
	if side.Limits.Cpu().String() != "2" || side.Requests.Cpu().String() != "2" {
		t.Errorf("a container with a cpu limit keeps it and requests it: %+v", side)
	}
	want := "LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app; memory limit for container side"
	if got := pd.Annotations[Annotation]; got != want {
		t.Errorf("annotation %q, want %q", got, want)
	}
}

func TestConstraintMessages(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: admissiontest.ResourceList("cpu", "1"), Min: admissiontest.ResourceList("memory", "10Mi"), MaxLimitRequestRatio: admissiontest.ResourceList("cpu", "2")},
		{Type: corev1.LimitTypePod, Max: admissiontest.ResourceList("memory", "1Gi")},
	}}}
	p := start(t, lr)
	for _, tc := range []struct {
		name string
		res  corev1.ResourceRequirements
		want string
	}{
		{"over-max", corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "2", "memory", "20Mi"), Limits: admissiontest.ResourceList("cpu", "2", "memory", "20Mi")},
			`pods "over-max" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"no-limit", corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "500m", "memory", "20Mi")},
			`maximum cpu usage per Container is 1.  No limit is specified`},
		{"under-min", corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "500m", "memory", "1Mi"), Limits: admissiontest.ResourceList("cpu", "500m", "memory", "20Mi")},
			`minimum memory usage per Container is 10Mi, but request is 1Mi`},
		{"ratio", corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "100m", "memory", "20Mi"), Limits: admissiontest.ResourceList("cpu", "1", "memory", "20Mi")},
			`cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000`},
		{"pod-max", corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "1", "memory", "2Gi"), Limits: admissiontest.ResourceList("cpu", "1", "memory", "2Gi")},
			`maximum memory usage per Pod is 1Gi, but limit is 2Gi`},
	} {
		err := p.Validate(context.Background(), admissiontest.Attrs(t, generic.Create, podsGVR, "", pod(tc.name, corev1.Container{Name: "c", Resources: tc.res}), nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	ok := corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "500m", "memory", "20Mi"), Limits: admissiontest.ResourceList("cpu", "1", "memory", "20Mi")}
	if err := p.Validate(context.Background(), admissiontest.Attrs(t, generic.Create, podsGVR, "", pod("fine", corev1.Container{Name: "c", Resources: ok}), nil)); err != nil {
		t.Errorf("a pod within every bound: %v", err)
	}
}

func TestClaimBounds(t *testing.T) {
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypePersistentVolumeClaim, Min: admissiontest.ResourceList("storage", "1Gi"), Max: admissiontest.ResourceList("storage", "5Gi")},
	}}}
	p := start(t, lr)
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: admissiontest.ResourceList("storage", size)}}}
	}
	gvr := corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	for size, want := range map[string]string{
		"10Gi":  `persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi`,
		"100Mi": `minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi`,
		"2Gi":   "",
	} {
		err := p.Validate(context.Background(), admissiontest.Attrs(t, generic.Create, gvr, "", claim("c", size), nil))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("claim of %s: %v, want %q", size, err, want)
		}
	}
}

// TestLiveLookup: a LimitRange the informer has not seen is found through the API.
func TestLiveLookup(t *testing.T) {
	p := start(t)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Default: admissiontest.ResourceList("cpu", "300m")}}}}
	p.live.List = func(context.Context, string) ([]*corev1.LimitRange, error) { return []*corev1.LimitRange{lr}, nil }
	pd := pod("web", corev1.Container{Name: "app"})
	if err := p.Admit(context.Background(), admissiontest.Attrs(t, generic.Create, podsGVR, "", pd, nil)); err != nil {
		t.Fatal(err)
	}
	if got := pd.Spec.Containers[0].Resources.Limits.Cpu().String(); got != "300m" {
		t.Errorf("default from the live lookup: cpu limit %s, want 300m", got)
	}
}
