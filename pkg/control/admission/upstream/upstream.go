// Package upstream runs k8s.io/apiserver's own admission plugins (the admission webhooks
// and the admission policies) in our chain: it turns our write's attributes into
// k8s.io/apiserver's admission.Attributes and gives them the scheme and resource mapping
// those plugins convert and match with.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"
)

// Attributes are a write's attributes as k8s.io/apiserver's plugins read them. The audit
// annotations the plugins add (a webhook's, a policy's Audit action) go to the request's
// audit event, as kube-apiserver's audit layer takes them from its attributes.
func Attributes(ctx context.Context, a *generic.Attributes) (admission.Attributes, error) {
	kind, err := kindOf(a)
	if err != nil {
		return nil, err
	}
	op, options := operation(a)
	var info user.Info = &user.DefaultInfo{}
	if u, ok := authn.UserFrom(ctx); ok {
		info = &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	rec := admission.NewAttributesRecord(a.Object, a.OldObject, kind, a.Namespace, a.Name, a.Resource.GroupVersionResource,
		a.Subresource, op, options, a.DryRun, info)
	return &auditing{Attributes: rec, ctx: ctx}, nil
}

type auditing struct {
	admission.Attributes
	ctx context.Context
}

func (a *auditing) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

func (a *auditing) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	audit.AddAuditAnnotation(a.ctx, key, value)
	return nil
}

// kindOf is the kind of the write's object: the resource's for the resource and its
// status, the subresource's own (Binding, Eviction, Scale) where it has one.
func kindOf(a *generic.Attributes) (schema.GroupVersionKind, error) {
	if a.Subresource == "" || a.Subresource == "status" {
		return a.Resource.GVK(), nil
	}
	obj := a.Object
	if obj == nil {
		obj = a.OldObject
	}
	if obj == nil {
		return a.Resource.GVK(), nil
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	if runtime.IsNotRegisteredError(err) {
		return a.Resource.GVK(), nil // a custom resource (its scale): client-go's scheme does not know it
	}
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("the kind of %s/%s: %w", a.Resource.Resource, a.Subresource, err)
	}
	return kinds[0], nil
}

func operation(a *generic.Attributes) (admission.Operation, runtime.Object) {
	var dryRun []string
	if a.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	meta := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: kind}
	}
	switch a.Operation {
	case generic.Update:
		return admission.Update, &metav1.UpdateOptions{TypeMeta: meta("UpdateOptions"), DryRun: dryRun}
	case generic.Delete:
		return admission.Delete, &metav1.DeleteOptions{TypeMeta: meta("DeleteOptions"), DryRun: dryRun}
	case generic.Connect:
		return admission.Connect, nil
	default:
		return admission.Create, &metav1.CreateOptions{TypeMeta: meta("CreateOptions"), DryRun: dryRun}
	}
}

// Objects are the admission.ObjectInterfaces of the kinds the registry serves: client-go's
// scheme and the registry's custom resources, and the resource mapper that tells each
// resource's kind and which resources are one stored resource (autoscaling/v1 and v2
// HorizontalPodAutoscalers, a custom resource's versions), for matchPolicy Equivalent.
type Objects struct {
	mapper    *resourceMapper
	defaulter defaulter
	convertor convertor
}

// NewObjects maps every resource of reg, as it is at each admission.
func NewObjects(reg *registry.Registry) *Objects {
	return &Objects{mapper: &resourceMapper{reg: reg}, defaulter: defaulter{reg}, convertor: convertor{scheme.Scheme, reg}}
}

// resourceMapper maps the registry's resources as they are now: custom resources come and
// go with their CustomResourceDefinitions, whose versions kube-apiserver's CRD handler
// registers as it serves them. The mapping is rebuilt when the registry's list changes.
type resourceMapper struct {
	reg    *registry.Registry
	mu     sync.Mutex
	mapped []*registry.Resource // the list the mapper was built from
	mapper runtime.EquivalentResourceMapper
}

func (m *resourceMapper) current() runtime.EquivalentResourceMapper {
	resources := m.reg.Resources()
	m.mu.Lock()
	defer m.mu.Unlock()
	// The registry never changes a list it gave out: it makes a new one, or appends.
	if m.mapper == nil || len(resources) != len(m.mapped) || (len(resources) > 0 && &resources[0] != &m.mapped[0]) {
		m.mapper, m.mapped = mapResources(resources), resources
	}
	return m.mapper
}

func (m *resourceMapper) EquivalentResourcesFor(r schema.GroupVersionResource, sub string) []schema.GroupVersionResource {
	return m.current().EquivalentResourcesFor(r, sub)
}

func (m *resourceMapper) KindFor(r schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	return m.current().KindFor(r, sub)
}

// mapResources maps resources, those stored as another resource (Conversion) equivalent to it.
func mapResources(resources []*registry.Resource) runtime.EquivalentResourceMapper {
	storage := map[schema.GroupResource]string{}
	for _, r := range resources {
		if r.Conversion != nil {
			storage[r.GroupResource()] = r.Conversion.Storage.GroupResource().String()
		}
	}
	m := runtime.NewEquivalentResourceRegistryWithIdentity(func(gr schema.GroupResource) string {
		if id, ok := storage[gr]; ok {
			return id
		}
		return gr.String()
	})
	for _, r := range resources {
		m.RegisterKindFor(r.GroupVersionResource, "", r.GVK())
		for _, sub := range r.Subresources {
			m.RegisterKindFor(r.GroupVersionResource, sub, subresourceKind(r, sub))
		}
	}
	return m
}

func subresourceKind(r *registry.Resource, sub string) schema.GroupVersionKind {
	switch sub {
	case "scale":
		return schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	case "binding":
		return schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
	case "eviction":
		return schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	}
	return r.GVK()
}

func (o *Objects) GetObjectCreater() runtime.ObjectCreater     { return creater{} }
func (o *Objects) GetObjectTyper() runtime.ObjectTyper         { return scheme.Scheme }
func (o *Objects) GetObjectDefaulter() runtime.ObjectDefaulter { return o.defaulter }
func (o *Objects) GetObjectConvertor() runtime.ObjectConvertor { return o.convertor }
func (o *Objects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.mapper
}

// defaulter applies the request defaults of the resource serving an object's kind (a
// built-in kind's defaulting, a custom resource's structural schema's defaults): the
// plugins default what each mutating webhook or policy returns before the next one sees
// it, as kube-apiserver's scope defaulter (its scheme's, apiextensions' unstructuredDefaulter)
// does, so a container a webhook adds gets its imagePullPolicy and terminationMessagePath.
type defaulter struct{ reg *registry.Registry }

func (d defaulter) Default(obj runtime.Object) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return
		}
		gvk = kinds[0]
	}
	res, ok := d.reg.ForKind(gvk)
	if !ok {
		return
	}
	def := res.Rules.DefaultRequest
	if def == nil {
		def = res.Rules.Default
	}
	if def == nil {
		return
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		defaultThroughJSON(res, def, u)
		return
	}
	def(obj)
}

// defaultThroughJSON defaults a custom resource, which the plugins hold as Unstructured,
// as its resource's object, through its JSON as the convertor converts it.
func defaultThroughJSON(res *registry.Resource, def func(runtime.Object), u *unstructured.Unstructured) {
	served, err := res.New()
	if err != nil {
		return
	}
	data, err := json.Marshal(u)
	if err != nil || json.Unmarshal(data, served) != nil {
		return
	}
	def(served)
	if data, err = json.Marshal(served); err == nil {
		_ = json.Unmarshal(data, u)
	}
}

// creater makes the objects of client-go's scheme, and a custom resource's (a kind the
// scheme does not know) as Unstructured, as kube-apiserver's custom resource handler does.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if scheme.Scheme.Recognizes(gvk) {
		return scheme.Scheme.New(gvk)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// convertor copies an object into one of its own type (kube-apiserver converts to its
// internal version there; our objects are the served versions already), converts a custom
// resource to the version of out through its CustomResourceDefinition's conversion, else
// converts through the scheme.
type convertor struct {
	*runtime.Scheme
	reg *registry.Registry
}

func (c convertor) Convert(in, out, context any) error {
	// A custom resource: our apiextensions.Object, or the Unstructured a webhook is sent
	// or whose patch is decoded into.
	_, inU := in.(*unstructured.Unstructured)
	_, outU := out.(*unstructured.Unstructured)
	if inU || outU {
		return c.convertCustomResource(in.(runtime.Object), out.(runtime.Object))
	}
	if reflect.TypeOf(in) == reflect.TypeOf(out) && reflect.TypeOf(in).Kind() == reflect.Pointer {
		reflect.ValueOf(out).Elem().Set(reflect.ValueOf(in).Elem())
		return nil
	}
	return c.Scheme.Convert(in, out, context)
}

// convertCustomResource converts in to the version out has, through the conversion of the
// resource serving it (its webhook under the Webhook strategy: one call from in's version to
// out's; under None only apiVersion changes), as kube-apiserver's custom resource handler's
// convertor does for a webhook of another version (matchPolicy Equivalent) and back.
func (c convertor) convertCustomResource(in, out runtime.Object) error {
	to := out.GetObjectKind().GroupVersionKind()
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if res, ok := c.reg.ForKind(to); ok && res.Conversion != nil && in.GetObjectKind().GroupVersionKind() != to {
		obj, err := res.New()
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, obj); err != nil {
			return err
		}
		if obj, err = res.Conversion.FromStorage(obj); err != nil {
			return err
		}
		if data, err = json.Marshal(obj); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return err
	}
	if !to.Empty() {
		out.GetObjectKind().SetGroupVersionKind(to)
	}
	return nil
}

// Mutating runs k8s.io/apiserver's mutating plugins (MutatingAdmissionPolicy, then the
// mutating webhooks, kube-apiserver's order) on one set of attributes, and all of them once
// more when one whose reinvocationPolicy is IfNeeded saw the object before a later one
// changed it, as kube-apiserver's reinvoker does (it re-runs the built-in plugins too).
type Mutating struct {
	plugins []admission.MutationInterface
	objects *Objects
	started func() bool
}

// NewMutating runs plugins, in order, once started says the shared informers they read
// have begun: before that (the server's own bootstrap writes) nothing can be registered.
func NewMutating(objects *Objects, started func() bool, plugins ...admission.MutationInterface) *Mutating {
	return &Mutating{plugins: plugins, objects: objects, started: started}
}

// AdmitsConnect: the mutating webhooks and policies see CONNECTs too.
func (m *Mutating) AdmitsConnect() {}

// Admit lets each plugin mutate the write's object in place.
func (m *Mutating) Admit(ctx context.Context, a *generic.Attributes) error {
	if !m.started() {
		return nil
	}
	attrs, err := Attributes(ctx, a)
	if err != nil {
		return err
	}
	if err := m.admit(ctx, attrs); err != nil {
		return err
	}
	if rc := attrs.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return m.admit(ctx, attrs)
	}
	return nil
}

func (m *Mutating) admit(ctx context.Context, attrs admission.Attributes) error {
	for _, p := range m.plugins {
		if !p.Handles(attrs.GetOperation()) {
			continue
		}
		if err := p.Admit(ctx, attrs, m.objects); err != nil {
			return err
		}
	}
	return nil
}
