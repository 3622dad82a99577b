// Package registry describes the API's resources: their group/version/kind, scope, names,
// subresources and the per-kind rules (defaulting, validation, selectable fields, table
// columns) that the REST layer applies, with the helpers the rules of several API groups
// share (columns, metadata, pod template and load-balancer status validation). The rules
// of each group live in a subpackage named after it (core, apps, batch, ...), as in
// Kubernetes' pkg/registry; builtin assembles them. It knows nothing of HTTP or storage.
package registry

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/deprecation"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// IsCustom tells a custom resource's kind, which the scheme of built-in kinds does not know.
func IsCustom(kind schema.GroupVersionKind) bool {
	return !kind.Empty() && !scheme.Scheme.Recognizes(kind)
}

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
	// Conversion is set on a resource served at a version other than the one its objects
	// are stored at (autoscaling/v1 HorizontalPodAutoscalers are stored as v2): both
	// versions share one key space, and every read and write converts. It is set on the
	// storage version itself (Storage the resource) where stored objects may be of other
	// versions: the custom resources of a CustomResourceDefinition with a conversion
	// webhook, stored before its storage version changed.
	Conversion *Conversion
	// Computed, when set, makes a resource that is not stored but made at each read
	// (ComponentStatus: the health of the control plane's parts); it serves get and list
	// only. The control plane may replace it before serving.
	Computed func(ctx context.Context) ([]runtime.Object, error)
	// NewObject and NewListObject, when set, make the resource's objects instead of the
	// scheme: the custom resources of a CustomResourceDefinition have no Go type there.
	NewObject, NewListObject func() runtime.Object
	// Deprecation, when set, is the warning sent with every request to the resource: that
	// of a deprecated built-in kind or CustomResourceDefinition version, as kube-apiserver
	// sends it.
	Deprecation string
	// TypeConverter, when set, gives the schema that managed fields and server-side apply
	// work on, for a kind without a generated OpenAPI definition (a custom resource's, from
	// its CustomResourceDefinition); it may build the schema at its first call.
	TypeConverter func() (managedfields.TypeConverter, error)
	// Terminating marks the resource of a CustomResourceDefinition being deleted: creates
	// are refused (apiextensions-apiserver's forbidCreateAdmission) and discovery lists
	// only the verbs left (delete, deletecollection, get, list, watch).
	Terminating bool
	// Gone, when set, is closed when the resource stops being served (its
	// CustomResourceDefinition deleted): its watches end then, as kube-apiserver's
	// crdHandler ends them when it tears the storage down.
	Gone <-chan struct{}
}

// Conversion turns objects of a served version into the stored version and back, as
// kube-apiserver converts through its internal version. FromStorage is given the object as
// it is stored, at whatever version it was stored; an error it or ToStorage returns that is
// an API status (apierrors.APIStatus) is the request's answer.
type Conversion struct {
	Storage     *Resource
	ToStorage   func(obj runtime.Object) (runtime.Object, error)
	FromStorage func(stored runtime.Object) (runtime.Object, error)
}

// Rules are the per-kind behaviours; every field is optional.
type Rules struct {
	// Default fills defaulted fields on create and update, as Kubernetes' defaulters do.
	Default func(obj runtime.Object)
	// Decoded, when set, brings an object read from storage up to the kind's current rules
	// on every read (GET, LIST, WATCH, and the old object of a write), as kube-apiserver's
	// storage codec of custom resources prunes and defaults what it decodes with the
	// CustomResourceDefinition's current schema: a default added to the schema later shows
	// on objects stored before it, and is stored at their next write. A kind with Decoded
	// is decoded for every read instead of sending its stored JSON.
	Decoded func(obj runtime.Object) error
	// DefaultRequest, when set, replaces Default for a create request before admission (as
	// Kubernetes defaults it while decoding it): it leaves unset what admission fills in.
	DefaultRequest func(obj runtime.Object)
	// Validate checks a new object; ValidateUpdate checks an update against the old one.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// Fields are the selectable fields beyond metadata.name/metadata.namespace, for the
	// kinds kube-apiserver registers a field label conversion of: a field selector on any
	// other kind may name only metadata.name and metadata.namespace.
	Fields func(obj runtime.Object) fields.Set
	// Table renders server-side `kubectl get` columns.
	Table *TableDef
	// Warnings are kube's strategy's WarningsOnCreate (old is nil) or WarningsOnUpdate of a
	// write of the object (its scale too, not its status), and what the object asks for that
	// minik8s does not act on yet, sent as `Warning:` headers (kubectl prints them): a field
	// is never silently ignored, and an update that leaves it as it was does not repeat it.
	Warnings func(obj, old runtime.Object) []string
	// UnknownFields names the fields of a decoded object that its schema does not declare,
	// for kinds that decode whatever they are given (custom resources): what
	// ?fieldValidation= refuses or warns of, as it does a built-in kind's unknown fields.
	// Its error, whatever the field validation, is that the object cannot be decoded.
	UnknownFields func(obj runtime.Object) ([]string, error)
	// Generation: the kind's metadata.generation counts changes to its spec (1 on create),
	// as the strategies of Kubernetes' workloads, pods and PodDisruptionBudgets set it; other
	// kinds (Services, ConfigMaps, ...) have none.
	Generation bool
	// NoDeleteCollection: the kind cannot be deleted as a collection (namespaces, whose
	// REST in kube-apiserver has no DeleteCollection): discovery lists no deletecollection.
	NoDeleteCollection bool
	// GenerationChanged says whether an update changes what the object asks for outside a
	// spec (a kind with no spec, or a Deployment's annotations): 1 on create, then +1 each
	// time it says so, on writes of the object itself, not of its status.
	GenerationChanged func(obj, old runtime.Object) bool
	// PrepareCreate clears what a client may not set on create (typically status).
	PrepareCreate func(obj runtime.Object)
	// PrepareCreateWarnings are the warnings PrepareCreate gives of what it is about to
	// change in obj, sent even if the create is then refused, as kube's pod strategy warns
	// of the AppArmor annotations it turns into fields.
	PrepareCreateWarnings func(obj runtime.Object) []string
	// GracefulDelete returns the grace period a deletion gives the object (requested is
	// never negative), or false for a kind deleted without one; a graceful object is stored
	// marked first, even with 0 (kube's CheckGracefulDelete).
	GracefulDelete func(obj runtime.Object, requested *int64) (int64, bool)
	// ReturnDeletedObject: a DELETE that removes the object at once answers with the object,
	// not with a Status naming it (kube's store option of that name, set by the storage of
	// pods, services, namespaces, volumes and claims, and a few more).
	ReturnDeletedObject bool
	// RefuseDelete, when set, refuses a DELETE of the named object before anything else, as
	// kube's PriorityClass REST refuses the system priority classes (a deletion of the
	// collection is not asked, as kube's store does not ask).
	RefuseDelete func(name string) error
	// MarkDeleted, when set, is applied by the first deletion of an object to the object it
	// stores marked (deletionTimestamp set, and nothing else: no grace period, garbage
	// collector finalizer or new generation): it adds the finalizer that holds the object
	// until the kind's own cleanup is done, and may set the status, as
	// apiextensions-apiserver's CustomResourceDefinition Delete adds its cleanup finalizer
	// and Terminating condition.
	MarkDeleted func(obj runtime.Object)
	// Deleting, when set, changes the object the first deletion stores marked, as kube's
	// namespace Delete sets the Terminating phase (and no grace period). (Default cannot: it runs on status
	// writes too, which must not have their phase changed before validation.)
	Deleting func(obj runtime.Object)
	// Finalizing tells whether the kind's own finalizers (beyond metadata.finalizers) still
	// hold a deleted object, as a namespace's spec.finalizers do until it is empty.
	Finalizing func(obj runtime.Object) bool
	// NotCollected: the garbage collector leaves the kind alone (kube's Unsupported garbage
	// collection policy, Events'), so a deletion sets neither orphan nor foregroundDeletion.
	NotCollected bool
	// OrphanDependentsWarning, when set, makes a deletion that names no propagation policy
	// (nor orphanDependents) orphan the object's dependents, answered with this warning, as
	// kube-apiserver's batch/v1 Job storage does (its DefaultGarbageCollectionPolicy).
	OrphanDependentsWarning string
	// PrepareUpdate carries over from old what a client may leave out of an update (such
	// as the cluster IP a Service was given), before defaulting and validation.
	PrepareUpdate func(obj, old runtime.Object)
	// Claim takes from the cluster-wide ranges what obj needs and old (nil on create) does
	// not hold yet, such as a Service's cluster IP and node ports, and fills it into obj. It
	// runs before validation and validating admission, as kube's BeginCreate and BeginUpdate
	// (after PrepareUpdate on update); undo gives everything back if obj is not stored after
	// all, and is never nil when err is nil.
	Claim func(ctx context.Context, ranges allocator.Ranges, obj, old runtime.Object) (undo func() error, err error)
	// Release gives back what old held and obj no longer does; obj is nil once old is deleted.
	Release func(ctx context.Context, ranges allocator.Ranges, obj, old runtime.Object) error
	// Scale serves the kind's scale subresource.
	Scale *ScaleDef
	// Requester records who creates an object (a CSR's spec.username, uid, groups and
	// extra), as Kubernetes' strategies read the user from the request; it runs on create
	// only, after decoding, so a client cannot claim another identity.
	Requester func(obj runtime.Object, u user.Info)
	// SubresourceUpdates replace PrepareUpdate and ValidateUpdate for updates through the
	// named subresource, where a kind's rules differ by subresource (a CSR's status and
	// approval). An "approval" update takes status from the body, like "status".
	SubresourceUpdates map[string]SubresourceRules
	// ManagedFieldsReset are, by subresource ("" for the resource itself), the fields a
	// write there owns none of in managedFields, where the kind's Kubernetes strategy
	// (GetResetFields, GetResetFieldsFilter) differs from the default: the status on the
	// resource, the spec on status.
	ManagedFieldsReset map[string]fieldpath.Filter
	// StatusMetadata puts back what an update through status (or approval) may not change
	// of the metadata. The rest comes from the body, as most of Kubernetes' status
	// strategies reset only the spec; nil puts back nothing.
	StatusMetadata func(meta, old metav1.Object)
}

// StatusKeepsAllMetadata is the StatusMetadata of kinds whose status strategy keeps all
// the stored metadata but the managed fields, which record the update (flowcontrol's).
func StatusKeepsAllMetadata(meta, old metav1.Object) {
	managed := meta.GetManagedFields()
	*meta.(*metav1.ObjectMeta) = *old.(*metav1.ObjectMeta).DeepCopy()
	meta.SetManagedFields(managed)
}

// SubresourceRules prepare and validate an update through one subresource.
type SubresourceRules struct {
	Prepare  func(obj, old runtime.Object)
	Validate func(obj, old runtime.Object) field.ErrorList
}

// ScaleDef maps a kind to the autoscaling/v1 Scale of its scale subresource.
type ScaleDef struct {
	// Replicas returns spec.replicas, status.replicas and the selector of the counted pods
	// in label-selector syntax.
	Replicas func(obj runtime.Object) (spec, status int32, selector string)
	// SetReplicas sets spec.replicas.
	SetReplicas func(obj runtime.Object, replicas int32)
	// ReplicasPaths are where each version of the kind keeps spec.replicas (nil in a version
	// without scale), for the managed fields of writes through scale; nil: spec.replicas in
	// the resource's version.
	ReplicasPaths managedfields.ResourcePathMappings
	// UIDPrecondition refuses a Scale whose uid is not the object's (kube's built-in
	// workloads; a custom resource's scale ignores it).
	UIDPrecondition bool
}

// ReplicasScale is the ScaleDef of a workload scaled by its spec.replicas: fields gives
// the address of that field (to read or set), status.replicas and the selector.
func ReplicasScale[T runtime.Object](fields func(obj T) (spec **int32, status int32, selector string)) *ScaleDef {
	return &ScaleDef{
		Replicas: func(obj runtime.Object) (int32, int32, string) {
			spec, status, selector := fields(obj.(T))
			return Deref(*spec), status, selector
		},
		SetReplicas: func(obj runtime.Object, n int32) {
			spec, _, _ := fields(obj.(T))
			*spec = &n
		},
		UIDPrecondition: true,
	}
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
func (r *Resource) New() (runtime.Object, error) {
	if r.NewObject != nil {
		return r.NewObject(), nil
	}
	return scheme.Scheme.New(r.GVK())
}

// NewList returns an empty list of the resource's kind.
func (r *Resource) NewList() (runtime.Object, error) {
	if r.NewListObject != nil {
		return r.NewListObject(), nil
	}
	return scheme.Scheme.New(r.GroupVersion().WithKind(r.Kind + "List"))
}

// Registry indexes resources by group/version and by plural name. The built-in resources
// are fixed; custom resources come and go with their CustomResourceDefinitions (Add, Remove).
type Registry struct {
	mu    sync.RWMutex
	byGVR map[schema.GroupVersionResource]*Resource
	all   []*Resource
}

// New builds a registry from the given resources.
func New(resources ...*Resource) (*Registry, error) {
	reg := &Registry{byGVR: map[schema.GroupVersionResource]*Resource{}}
	if err := reg.Add(resources...); err != nil {
		return nil, err
	}
	return reg, nil
}

// Add registers resources, none of which may be served yet.
func (reg *Registry) Add(resources ...*Resource) error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, r := range resources {
		if _, dup := reg.byGVR[r.GroupVersionResource]; dup {
			return fmt.Errorf("resource %s registered twice", r.GroupVersionResource)
		}
		if _, err := r.New(); err != nil {
			return fmt.Errorf("resource %s: kind %s is not in the scheme: %w", r.GroupVersionResource, r.Kind, err)
		}
		reg.byGVR[r.GroupVersionResource] = r
		reg.all = append(reg.all, r)
	}
	return nil
}

// Remove stops serving the resources named.
func (reg *Registry) Remove(gvrs ...schema.GroupVersionResource) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, gvr := range gvrs {
		r, ok := reg.byGVR[gvr]
		if !ok {
			continue
		}
		delete(reg.byGVR, gvr)
		reg.all = slices.DeleteFunc(slices.Clone(reg.all), func(x *Resource) bool { return x == r })
	}
}

// Lookup finds a resource by group, version and plural name.
func (reg *Registry) Lookup(gvr schema.GroupVersionResource) (*Resource, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	r, ok := reg.byGVR[gvr]
	return r, ok
}

// ForKind finds the resource serving a kind.
func (reg *Registry) ForKind(gvk schema.GroupVersionKind) (*Resource, bool) {
	for _, r := range reg.Resources() {
		if r.GVK() == gvk {
			return r, true
		}
	}
	return nil, false
}

// ServesBuiltIn tells whether group is one of the built-in API's groups (the core group
// included), as opposed to a group only CustomResourceDefinitions serve, or none.
func (reg *Registry) ServesBuiltIn(group string) bool {
	return group == "" || slices.ContainsFunc(reg.Resources(), func(r *Resource) bool { return r.Group == group && !IsCustom(r.GVK()) })
}

// Resources returns every resource in registration order.
// The slice is never changed afterwards: Add and Remove make new ones.
func (reg *Registry) Resources() []*Resource {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.all
}

// GroupVersions returns the served group versions, the legacy core group first, the
// groups in registration order, each group's versions in kube's priority order (GA, beta,
// alpha, newest first: what kube-aggregator sorts versions of one priority by, as it does
// a CustomResourceDefinition's), so the first is the group's preferred version.
func (reg *Registry) GroupVersions() []schema.GroupVersion {
	var groups []string
	versions := map[string][]string{}
	for _, r := range reg.Resources() {
		vs, ok := versions[r.Group]
		if !ok {
			groups = append(groups, r.Group)
		}
		if !slices.Contains(vs, r.Version) {
			versions[r.Group] = append(vs, r.Version)
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i] == "" && groups[j] != "" })
	var out []schema.GroupVersion
	for _, g := range groups {
		vs := versions[g]
		slices.SortStableFunc(vs, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
		for _, v := range vs {
			out = append(out, schema.GroupVersion{Group: g, Version: v})
		}
	}
	return out
}

// NewResource describes a built-in resource: its group version, plural and kind, scope,
// rules, short names, categories and subresources; the singular is the lower-cased kind.
func NewResource(gv schema.GroupVersion, plural, kind string, namespaced bool, rules Rules, shortNames, categories []string, sub ...string) *Resource {
	return &Resource{
		Deprecation:          deprecationOf(gv.WithKind(kind)),
		GroupVersionResource: gv.WithResource(plural),
		Kind:                 kind,
		Singular:             strings.ToLower(kind),
		Namespaced:           namespaced,
		ShortNames:           shortNames,
		Categories:           categories,
		Subresources:         sub,
		Rules:                rules,
	}
}

// deprecationOf is the warning kube-apiserver v1.36 sends with every request to a built-in
// kind deprecated by then (v1 Endpoints, ComponentStatus), "" for the others.
func deprecationOf(gvk schema.GroupVersionKind) string {
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return ""
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if !deprecation.IsDeprecated(obj, 1, 36) {
		return ""
	}
	return deprecation.WarningMessage(obj)
}
