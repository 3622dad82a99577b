package priority

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func class(name string, value int32, def bool) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{TypeMeta: metav1.TypeMeta{Kind: "PriorityClass", APIVersion: "scheduling.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: def}
}

// priorityClasses is the resource the plugin reads.
var priorityClasses = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")

// The informer answers what it holds; a named class only the store holds yet (created a
// moment ago) is found there; a missing one is refused with Kubernetes' message; before the
// informers start the store answers, globalDefault included.
func TestResolve(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	high, fallback, late := class("high", 1000, false), class("fallback", 7, true), class("late", 50, false)
	admit := func(p *Plugin, name string) (*corev1.Pod, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{PriorityClassName: name}}
		err := p.Admit(context.Background(), admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("pods"), "", pod, nil))
		return pod, err
	}
	var p *Plugin
	admissiontest.Informers(t, func(inf *admission.Informers) {
		p = New(inf, admissiontest.Stored(t, reg, priorityClasses, high, fallback, late), reg)
	}, high, fallback)
	for _, c := range []struct {
		name, want string
		value      int32
	}{{"high", "high", 1000}, {"", "fallback", 7}, {"late", "late", 50}} {
		pod, err := admit(p, c.name)
		if err != nil || pod.Spec.PriorityClassName != c.want || *pod.Spec.Priority != c.value {
			t.Errorf("class %q: %v %q/%v, want %q/%d", c.name, err, pod.Spec.PriorityClassName, pod.Spec.Priority, c.want, c.value)
		}
	}
	if _, err := admit(p, "nowhere"); err == nil || !strings.Contains(err.Error(), "no PriorityClass with name nowhere was found") {
		t.Errorf("a missing class: %v", err)
	}

	client := fake.NewClientset()
	notStarted := New(admission.NewInformers(informers.NewSharedInformerFactory(client, 0), client), admissiontest.Stored(t, reg, priorityClasses, fallback), reg)
	if pod, err := admit(notStarted, ""); err != nil || *pod.Spec.Priority != 7 {
		t.Errorf("before the informers start, the store's globalDefault: %v %v", err, pod.Spec.Priority)
	}
}

// A second globalDefault class is refused, as Kubernetes' Priority plugin refuses it, on
// create and on an update that marks another class; the default itself may be updated.
func TestValidateOneGlobalDefault(t *testing.T) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	fallback, other := class("fallback", 7, true), class("other", 3, false)
	var p *Plugin
	admissiontest.Informers(t, func(inf *admission.Informers) {
		p = New(inf, admissiontest.Stored(t, reg, priorityClasses, fallback, other), reg)
	}, fallback, other)
	validate := func(op generic.Operation, pc *schedulingv1.PriorityClass, old runtime.Object) error {
		return p.Validate(context.Background(), admissiontest.Attrs(t, op, priorityClasses, "", pc, old))
	}
	const want = `priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass fallback is already marked as default. Only one default can exist`
	if err := validate(generic.Create, class("second", 9, true), nil); err == nil || err.Error() != want {
		t.Errorf("a second default created: %v, want %q", err, want)
	}
	if err := validate(generic.Create, class("second", 9, false), nil); err != nil {
		t.Errorf("a class that is not the default: %v", err)
	}
	if err := validate(generic.Update, class("other", 3, true), other); err == nil || !strings.Contains(err.Error(), "PriorityClass fallback is already marked as default") {
		t.Errorf("another class marked default: %v", err)
	}
	if err := validate(generic.Update, class("fallback", 7, true), fallback); err != nil {
		t.Errorf("the default itself updated: %v", err)
	}
}
