package podsecurity

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/utils/ptr"
)

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

var privileged = corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x",
	SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}

func start(t *testing.T) *Plugin {
	var p *Plugin
	admissiontest.Informers(t, func(inf *admission.Informers) {
		var err error
		if p, err = New(inf); err != nil {
			t.Fatal(err)
		}
	}, namespace("locked", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		namespace("watched", map[string]string{"pod-security.kubernetes.io/warn": "baseline"}),
		namespace("open", nil))
	return p
}

func validate(t *testing.T, p *Plugin, a *generic.Attributes) (warnings, error) {
	var w warnings
	err := p.Validate(warning.WithWarningRecorder(context.Background(), &w), a)
	return w, err
}

func TestPods(t *testing.T) {
	p := start(t)
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns}, Spec: *privileged.DeepCopy()}
	}
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	_, err := validate(t, p, admissiontest.Attrs(t, generic.Create, gvr, "", pod("locked"), nil))
	want := `pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("restricted namespace: %v, want %s", err, want)
	}
	w, err := validate(t, p, admissiontest.Attrs(t, generic.Create, gvr, "", pod("watched"), nil))
	if err != nil || len(w) != 1 || !strings.HasPrefix(w[0], `would violate PodSecurity "baseline:latest": privileged`) {
		t.Errorf("warn=baseline namespace: %v, warnings %q", err, w)
	}
	if w, err := validate(t, p, admissiontest.Attrs(t, generic.Create, gvr, "", pod("open"), nil)); err != nil || len(w) != 0 {
		t.Errorf("unlabelled namespace: %v, warnings %q", err, w)
	}
	// A status update is not a pod spec change.
	if _, err := validate(t, p, admissiontest.Attrs(t, generic.Update, gvr, "status", pod("locked"), pod("locked"))); err != nil {
		t.Errorf("status update in a restricted namespace: %v", err)
	}
}

func TestWorkloadsOnlyWarn(t *testing.T) {
	p := start(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "locked"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: *privileged.DeepCopy()}}}
	w, err := validate(t, p, admissiontest.Attrs(t, generic.Create, appsv1.SchemeGroupVersion.WithResource("deployments"), "", d, nil))
	if err != nil || len(w) != 1 || !strings.HasPrefix(w[0], `would violate PodSecurity "restricted:latest"`) {
		t.Errorf("privileged Deployment in a restricted namespace: %v, warnings %q", err, w)
	}
}

func TestNamespaceLabelsAreValidated(t *testing.T) {
	p := start(t)
	ns := namespace("new", map[string]string{"pod-security.kubernetes.io/enforce": "strictest"})
	_, err := validate(t, p, admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("namespaces"), "", ns, nil))
	if err == nil || !strings.Contains(err.Error(), "strictest") {
		t.Errorf("namespace with an unknown level: %v", err)
	}
}
