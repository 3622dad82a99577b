package defaultingressclass

import (
	"context"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func class(name string, age time.Duration, def string) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name,
		CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0).Add(-age))},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/" + name}}
	if def != "" {
		ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: def}
	}
	return ic
}

// TestAdmit: an Ingress created without a class gets the newest class annotated
// ingressclass.kubernetes.io/is-default-class=true, as kube-apiserver's DefaultIngressClass
// plugin sets it; one naming a class, by field or by the old annotation, keeps it, and updates
// and subresources are left alone.
func TestAdmit(t *testing.T) {
	p := admissiontest.Started(t, New,
		class("old", time.Hour, "true"), class("new", time.Minute, "true"), class("newest", 0, "false"), class("plain", 0, ""))
	gvr := networkingv1.SchemeGroupVersion.WithResource("ingresses")
	ingress := func(mutate func(*networkingv1.Ingress)) *networkingv1.Ingress {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
		if mutate != nil {
			mutate(ing)
		}
		return ing
	}
	for _, tc := range []struct {
		name string
		op   generic.Operation
		sub  string
		ing  *networkingv1.Ingress
		want *string
	}{
		{"no class: the newest default", generic.Create, "", ingress(nil), ptr.To("new")},
		{"a class named", generic.Create, "", ingress(func(i *networkingv1.Ingress) { i.Spec.IngressClassName = ptr.To("plain") }), ptr.To("plain")},
		{"the old annotation", generic.Create, "", ingress(func(i *networkingv1.Ingress) {
			i.Annotations = map[string]string{networkingv1beta1.AnnotationIngressClass: "other"}
		}), nil},
		{"an update", generic.Update, "", ingress(nil), nil},
		{"the status", generic.Create, "status", ingress(nil), nil},
	} {
		var old runtime.Object
		if tc.op == generic.Update {
			old = ingress(nil)
		}
		if err := p.Admit(context.Background(), admissiontest.Attrs(t, tc.op, gvr, tc.sub, tc.ing, old)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.ing.Spec.IngressClassName; ptr.Deref(got, "<nil>") != ptr.Deref(tc.want, "<nil>") {
			t.Errorf("%s: ingressClassName %s, want %s", tc.name, ptr.Deref(got, "<nil>"), ptr.Deref(tc.want, "<nil>"))
		}
	}
}

// TestAdmitNoDefault: without a class marked default, an Ingress keeps no class.
func TestAdmitNoDefault(t *testing.T) {
	p := admissiontest.Started(t, New, class("plain", 0, ""))
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	a := admissiontest.Attrs(t, generic.Create, networkingv1.SchemeGroupVersion.WithResource("ingresses"), "", ing, nil)
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if ing.Spec.IngressClassName != nil {
		t.Errorf("ingressClassName %q, want none", *ing.Spec.IngressClassName)
	}
}
