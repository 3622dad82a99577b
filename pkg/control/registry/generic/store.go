// Package generic is the object lifecycle of every kind, free of HTTP, as Kubernetes'
// genericregistry.Store is: create, read-modify-write update with optimistic concurrency,
// delete with grace periods, finalizers and propagation, over store.Interface, with the
// kind's rules from pkg/control/registry and the admission chain plugged in between. The
// subresources that are more than a field of their kind (pods' binding and eviction, the
// scale of workloads) live here too. The REST layer decodes, calls a Store, and encodes.
package generic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/warning"
)

// maxUpdateAttempts bounds the read-modify-write retries of one request under write races.
const maxUpdateAttempts = 32

// FieldTracker records who changed which field of an object (metadata.managedFields): live is
// the stored object, nil on create. The REST layer's field managers implement it, since who
// writes is a property of the request.
type FieldTracker interface {
	Track(ctx context.Context, res *registry.Resource, subresource string, live, obj runtime.Object) runtime.Object
}

// Config is what a Store needs.
type Config struct {
	Store    store.Interface
	Registry *registry.Registry
	// Ranges are the cluster-wide ranges objects claim values from (Service cluster IPs
	// and node ports).
	Ranges allocator.Ranges
	// Admission is the admission chain every write passes.
	Admission Admission
	// Fields records managed fields; nil records none.
	Fields FieldTracker
	// Stored, when set, is told of each object a create, update or binding stored (with
	// the writing request's context): the bytes the store now holds for it and the object
	// they encode, its resourceVersion set, so readers can take from the object what they
	// would decode the bytes for. It must neither change nor keep obj.
	Stored func(ctx context.Context, res *registry.Resource, value []byte, rev int64, obj runtime.Object)
	Log    *slog.Logger
}

// Store writes the objects of every resource of a registry.
type Store struct {
	store     store.Interface
	reg       *registry.Registry
	ranges    allocator.Ranges
	admission Admission
	fields    FieldTracker
	stored    func(ctx context.Context, res *registry.Resource, value []byte, rev int64, obj runtime.Object)
	log       *slog.Logger
}

// New builds a Store.
func New(cfg Config) *Store {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Store{store: cfg.Store, reg: cfg.Registry, ranges: cfg.Ranges, admission: cfg.Admission, fields: cfg.Fields, stored: cfg.Stored, log: cfg.Log}
}

// CreateOptions tune a Create.
type CreateOptions struct {
	DryRun bool
}

// UpdateFunc computes the new object from (a copy of) the current one.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// UpdateOptions tune an Update.
type UpdateOptions struct {
	// Subresource is "", "status", "finalize" or "scale": what the update may change.
	Subresource string
	DryRun      bool
	// UID, when set, must be the stored object's: the precondition a PUT's body's uid is.
	UID types.UID
	// deleting lets the update set deletionTimestamp/deletionGracePeriodSeconds, which only
	// the delete path may do.
	deleting bool
	// admitted: the write was admitted as what it is (a delete, a binding), not as an update.
	admitted bool
}

// AdmitConnect admits a CONNECT (exec, attach, port-forward) of an object's subresource,
// whose object is the request's options.
func (s *Store) AdmitConnect(ctx context.Context, res *registry.Resource, sub, ns, name string, options runtime.Object) error {
	return s.admission.connect(ctx, &Attributes{Operation: Connect, Resource: res, Subresource: sub, Namespace: ns, Name: name, Object: options})
}

// Get reads the object as it is now.
func (s *Store) Get(ctx context.Context, res *registry.Resource, ns, name string) (runtime.Object, error) {
	obj, _, err := s.current(ctx, res, name, Key(res, ns, name))
	return obj, err
}

// Create stores a new object after the Kubernetes create steps: defaulting and managed
// fields of the request, mutating admission, generateName, system metadata, the claims of
// cluster-wide values, status reset, defaulting, validation and validating admission.
func (s *Store) Create(ctx context.Context, res *registry.Resource, obj runtime.Object, opts CreateOptions) (runtime.Object, error) {
	obj = s.trackRequest(ctx, res, "", nil, obj)
	m := MustMeta(obj)
	attrs := &Attributes{Operation: Create, Resource: res, Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, DryRun: opts.DryRun}
	if err := s.admission.admit(ctx, attrs); err != nil {
		return nil, err
	}
	obj = attrs.Object
	m = MustMeta(obj)
	if m.GetName() == "" && m.GetGenerateName() != "" {
		// The prefix cut to 58 characters, so that the name fits a DNS label.
		m.SetName(names.SimpleNameGenerator.GenerateName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if res.Rules.Generation || res.Rules.GenerationChanged != nil {
		m.SetGeneration(1)
	}
	// As kube's BeginCreate, what the object takes from the cluster-wide ranges (a
	// Service's IPs and node ports) is claimed before it is validated or admitted, and
	// given back unless it is stored.
	undo, err := s.claim(ctx, res, obj, nil, opts.DryRun)
	if err != nil {
		return nil, err
	}
	stored := false
	defer func() {
		if !stored {
			undo()
		}
	}()
	if res.Rules.PrepareCreateWarnings != nil {
		for _, msg := range res.Rules.PrepareCreateWarnings(obj) {
			warning.AddWarning(ctx, "", msg)
		}
	}
	if res.Rules.PrepareCreate != nil {
		res.Rules.PrepareCreate(obj)
	}
	if res.Rules.Default != nil { // again: admission may have added what needs defaults
		res.Rules.Default(obj)
	}
	if err := validateCreate(res, obj); err != nil {
		return nil, err
	}
	warnKind(ctx, res, "", obj, nil)
	attrs.Object, attrs.Name = obj, m.GetName()
	if err := s.admission.validate(ctx, attrs); err != nil {
		return nil, err
	}
	data, err := encode(res, obj)
	if err != nil {
		return nil, err
	}
	key := Key(res, m.GetNamespace(), m.GetName())
	if opts.DryRun {
		// As kube's DryRunnableStorage: a dry run answers what the create would, a taken name too.
		if _, err := s.store.Get(ctx, key); err == nil {
			return nil, apierrors.NewAlreadyExists(res.GroupResource(), m.GetName())
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return writeResponse(res, obj, data, 0)
	}
	rev, err := s.store.Create(ctx, key, data)
	if errors.Is(err, store.ErrExists) {
		return nil, apierrors.NewAlreadyExists(res.GroupResource(), m.GetName())
	}
	if err != nil {
		return nil, err
	}
	stored = true
	SetResourceVersion(obj, rev)
	s.wrote(ctx, res, data, rev, obj)
	return writeResponse(res, obj, data, rev)
}

// wrote tells Config.Stored of an object stored as value at rev.
func (s *Store) wrote(ctx context.Context, res *registry.Resource, value []byte, rev int64, obj runtime.Object) {
	if s.stored != nil {
		s.stored(ctx, res, value, rev, obj)
	}
}

func validateCreate(res *registry.Resource, obj runtime.Object) error {
	m := ObjectMeta(obj)
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if res.Rules.Validate != nil {
		errs = append(errs, res.Rules.Validate(obj)...)
	} else {
		errs = append(errs, validation.ValidateObjectMeta(m, res.Namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	}
	errs = withFinalizerErrors(errs, validateFinalizerNames(res, m))
	if len(errs) > 0 {
		return invalid(res, obj, m.Name, errs)
	}
	return nil
}

// invalid is the 422 for obj's errs. It names a resource served converted by its stored
// kind, as kube names it by its internal kind (an events.k8s.io Event is a core Event), and
// a custom resource by the kind its body gave, as kube does (an unstructured object's kind
// is its own; another kind than the resource's is one of errs).
func invalid(res *registry.Resource, obj runtime.Object, name string, errs field.ErrorList) error {
	kind := res.GVK().GroupKind()
	if c := res.Conversion; c != nil && c.Storage != nil {
		kind = c.Storage.GVK().GroupKind()
	}
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" && registry.IsCustom(res.GVK()) {
		kind.Kind = k
	}
	return apierrors.NewInvalid(kind, name, errs)
}

// trackRequest defaults a write's request as Kubernetes does while decoding it, and records
// its fields as the requester's before admission and the kind's strategy: what admission adds
// (a pod's service account volume, tolerations, priority) and what the strategy sets or
// resets (a Service's cleared cluster IP) is owned by no manager, and is not compared field
// by field. live is the stored object, nil on create.
func (s *Store) trackRequest(ctx context.Context, res *registry.Resource, subresource string, live, obj runtime.Object) runtime.Object {
	if res.Rules.DefaultRequest != nil {
		res.Rules.DefaultRequest(obj)
	} else if res.Rules.Default != nil {
		res.Rules.Default(obj)
	}
	if s.fields == nil {
		return obj
	}
	return s.fields.Track(ctx, res, subresource, live, obj)
}

// Update is a read-modify-write with optimistic concurrency: tryUpdate sees the current
// object; a resourceVersion it leaves set must still be current (else 409 Conflict); a race
// with another writer re-runs tryUpdate on the newer object. An update that leaves an object
// marked for deletion with no finalizer and no grace period left deletes it.
func (s *Store) Update(ctx context.Context, res *registry.Resource, ns, name string, opts UpdateOptions, tryUpdate UpdateFunc) (runtime.Object, error) {
	key := Key(res, ns, name)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		// A request that timed out stops here, as Kubernetes' update loop does at its next
		// read from etcd: its client has its 504, and tryUpdate (a patch) may be costly.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		old, kv, err := s.current(ctx, res, name, key)
		if err != nil {
			return nil, err
		}
		if uid := MustMeta(old).GetUID(); opts.UID != "" && opts.UID != uid {
			// Kubernetes' etcd3 store checks it first, in these words.
			return nil, storagePreconditionConflict(res, name, key, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", opts.UID, uid))
		}
		obj, err := tryUpdate(old.DeepCopyObject())
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		if rv := MustMeta(obj).GetResourceVersion(); rv != "" && rv != MustMeta(old).GetResourceVersion() {
			return nil, conflict(res, name)
		}
		obj = s.trackRequest(ctx, res, opts.Subresource, old, obj)
		attrs := &Attributes{Operation: Update, Resource: res, Subresource: opts.Subresource, Namespace: ns, Name: name, Object: obj, OldObject: old, DryRun: opts.DryRun}
		if !opts.admitted {
			if err := s.admission.admit(ctx, attrs); err != nil {
				return nil, err
			}
		}
		obj, err = prepareUpdate(res, opts, attrs.Object, old)
		if err != nil {
			return nil, err
		}
		out, retry, err := s.writeUpdate(ctx, res, key, opts, attrs, obj, kv)
		if retry {
			continue
		}
		return out, err
	}
	return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("too many concurrent writers, gave up after %d attempts", maxUpdateAttempts))
}

// writeUpdate claims, validates, admits and stores a prepared update of the object stored
// as kv; retry tells that another writer came first and the update must start again. As
// kube's BeginUpdate, what the update takes from the cluster-wide ranges (a Service's IPs
// and node ports) is claimed before it is validated or admitted, and given back unless it
// is stored.
func (s *Store) writeUpdate(ctx context.Context, res *registry.Resource, key string, opts UpdateOptions, attrs *Attributes, obj runtime.Object, kv store.KV) (_ runtime.Object, retry bool, _ error) {
	old := attrs.OldObject
	undo, err := s.claim(ctx, res, obj, old, opts.DryRun)
	if err != nil {
		return nil, false, err
	}
	stored := false
	defer func() {
		if !stored {
			undo()
		}
	}()
	if err := validateUpdate(res, opts, obj, old); err != nil {
		return nil, false, err
	}
	if !opts.deleting {
		warnKind(ctx, res, opts.Subresource, obj, old)
	}
	if !opts.admitted {
		attrs.Object = obj
		if err := s.admission.validate(ctx, attrs); err != nil {
			return nil, false, err
		}
	}
	data, err := encode(res, obj)
	if err != nil {
		return nil, false, err
	}
	if (bytes.Equal(data, kv.Value) && !kv.Stale) || opts.DryRun {
		// Nothing changed: like Kubernetes, no new resourceVersion and no watch event
		// (unless the stored value is encrypted with an old key: the rewrite re-encrypts).
		out, err := writeResponse(res, obj, data, kv.Revision)
		return out, false, err
	}
	// The delete path stores the mark even when nothing holds the object, so watchers see
	// it before the object goes (as kube's store does); other updates complete it.
	deleted := !opts.deleting && finalized(res, obj)
	var rev int64
	if deleted {
		_, _, err = s.store.Delete(ctx, key, kv.Revision)
	} else if rev, err = s.store.Update(ctx, key, data, kv.Revision); err == nil {
		SetResourceVersion(obj, rev)
		s.wrote(ctx, res, data, rev, obj)
	}
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil, true, nil
	}
	if err != nil {
		return obj, false, err
	}
	stored = true
	s.release(ctx, res, obj, old, deleted)
	if deleted {
		return obj, false, nil
	}
	out, err := writeResponse(res, obj, data, rev)
	return out, false, err
}

// current reads the object at key as it is now, with its store revision.
func (s *Store) current(ctx context.Context, res *registry.Resource, name, key string) (runtime.Object, store.KV, error) {
	kv, err := s.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, kv, apierrors.NewNotFound(res.GroupResource(), name)
	}
	if err != nil {
		return nil, kv, err
	}
	obj, err := Decode(res, kv.Value, kv.Revision)
	return obj, kv, err
}

func conflict(res *registry.Resource, name string) error {
	return apierrors.NewConflict(res.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// warnKind records the kind's warnings on a valid object obj written from old (nil on
// create) for the request's answer, as kube's BeforeCreate and BeforeUpdate do once the
// object validates: they come with a refusal that follows (a taken name, admission, a
// conflict) too. Only writes of the object or its scale warn: the status strategies warn of
// nothing, and a deletion's mark is no update in kube.
func warnKind(ctx context.Context, res *registry.Resource, subresource string, obj, old runtime.Object) {
	if res.Rules.Warnings == nil || subresource != "" && subresource != "scale" {
		return
	}
	for _, msg := range res.Rules.Warnings(obj, old) {
		warning.AddWarning(ctx, "", msg)
	}
}

// storagePreconditionConflict is the 409 of a precondition that Kubernetes' etcd3 store
// checks, in its words (msg says which precondition failed).
func storagePreconditionConflict(res *registry.Resource, name, key, msg string) error {
	return apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: %s", key, msg))
}
