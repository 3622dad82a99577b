// Package admissiontest builds what the admission plugins' unit tests share: attributes
// of a write and started informers over a fake clientset.
package admissiontest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// Attrs is a write of obj (old for updates and deletes) to the built-in resource gvr.
func Attrs(t testing.TB, op generic.Operation, gvr schema.GroupVersionResource, sub string, obj, old runtime.Object) *generic.Attributes {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	res, ok := reg.Lookup(gvr)
	if !ok {
		t.Fatalf("no resource %v", gvr)
	}
	a := &generic.Attributes{Operation: op, Resource: res, Subresource: sub, Object: obj, OldObject: old}
	for _, o := range []runtime.Object{obj, old} {
		if m, err := meta.Accessor(o); o != nil && err == nil {
			a.Namespace, a.Name = m.GetNamespace(), m.GetName()
		}
	}
	return a
}

// Stored is a bolt store holding objs of the built-in resource gvr, written as the API
// server stores them: what a plugin finds there and not yet in its informer.
func Stored(t testing.TB, reg *registry.Registry, gvr schema.GroupVersionResource, objs ...runtime.Object) store.Interface {
	t.Helper()
	st := storetest.Bolt(t)
	res, ok := reg.Lookup(gvr)
	if !ok {
		t.Fatalf("no resource %v", gvr)
	}
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Create(context.Background(), generic.Key(res, m.GetNamespace(), m.GetName()), data); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// Informers are started informers over a fake clientset holding objs; the fake is
// returned to inspect the plugins' writes.
func Informers(t testing.TB, register func(*admission.Informers), objs ...runtime.Object) (*admission.Informers, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	inf := admission.NewInformers(informers.NewSharedInformerFactory(client, 0), client)
	register(inf)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	inf.Start(ctx)
	return inf, client
}

// Started makes a plugin with newPlugin on informers over a fake clientset holding objs, and
// starts the informers (Informers, for a plugin with no other inputs).
func Started[P any, O runtime.Object](t testing.TB, newPlugin func(*admission.Informers) P, objs ...O) P {
	t.Helper()
	var p P
	all := make([]runtime.Object, len(objs))
	for i, o := range objs {
		all[i] = o
	}
	Informers(t, func(inf *admission.Informers) { p = newPlugin(inf) }, all...)
	return p
}

// ResourceList is a ResourceList of name, quantity pairs.
func ResourceList(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}
