// Package registry describes the API's resources: their group/version/kind, scope, names,
// subresources and the per-kind rules (defaulting, validation, selectable fields, table
// columns) that the REST layer applies. It knows nothing of HTTP or storage.
package registry

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// Resource is one REST resource (e.g. core/v1 pods).
type Resource struct {
	schema.GroupVersionResource
	Kind         string
	Singular     string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	Subresources []string // "status", "binding", ...
	Rules        Rules
}

// Rules are the per-kind behaviours; every field is optional.
type Rules struct {
	// Default fills defaulted fields on create and update, as Kubernetes' defaulters do.
	Default func(obj runtime.Object)
	// Validate checks a new object; ValidateUpdate checks an update against the old one.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// Fields are the selectable fields beyond metadata.name/metadata.namespace.
	Fields func(obj runtime.Object) fields.Set
	// Table renders server-side `kubectl get` columns.
	Table *TableDef
	// PrepareCreate clears what a client may not set on create (typically status).
	PrepareCreate func(obj runtime.Object)
	// GracefulDelete returns the grace period to apply on delete, or false to delete now.
	GracefulDelete func(obj runtime.Object, requested *int64) (int64, bool)
	// Finalizing tells whether the kind's own finalizers (beyond metadata.finalizers) still
	// hold a deleted object, as a namespace's spec.finalizers do until it is empty.
	Finalizing func(obj runtime.Object) bool
}

// GVK returns the group/version/kind of the resource's objects.
func (r *Resource) GVK() schema.GroupVersionKind { return r.GroupVersion().WithKind(r.Kind) }

// HasSubresource tells whether the resource serves the named subresource.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// New returns an empty object of the resource's kind.
func (r *Resource) New() (runtime.Object, error) { return scheme.Scheme.New(r.GVK()) }

// NewList returns an empty list of the resource's kind.
func (r *Resource) NewList() (runtime.Object, error) {
	return scheme.Scheme.New(r.GroupVersion().WithKind(r.Kind + "List"))
}

// Registry indexes resources by group/version and by plural name.
type Registry struct {
	byGVR map[schema.GroupVersionResource]*Resource
	all   []*Resource
}

// New builds a registry from the given resources.
func New(resources ...*Resource) (*Registry, error) {
	reg := &Registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
	for _, r := range resources {
		if _, dup := reg.byGVR[r.GroupVersionResource]; dup {
			return nil, fmt.Errorf("resource %s registered twice", r.GroupVersionResource)
		}
		if _, err := r.New(); err != nil {
			return nil, fmt.Errorf("resource %s: kind %s is not in the scheme: %w", r.GroupVersionResource, r.Kind, err)
		}
		reg.byGVR[r.GroupVersionResource] = r
		reg.all = append(reg.all, r)
	}
	return reg, nil
}

// Lookup finds a resource by group, version and plural name.
func (reg *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// ForKind finds the resource serving a kind.
func (reg *Registry) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	for _, r := range reg.all {
		if r.GVK() == gvk {
			return r, true
		}
	}
	return nil, false
}

// Resources returns every resource in registration order.
func (reg *Registry) Resources() []*Resource { return reg.all }

// GroupVersions returns the served group versions, the legacy core group first.
func (reg *Registry) GroupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, r := range reg.all {
		gv := r.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Group == "" && out[j].Group != "" })
	return out
}
