package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxUpdateAttempts bounds the read-modify-write retries of one request under write races.
const maxUpdateAttempts = 32

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	obj, warnings, err := s.decodeRequest(r, res, info)
	if err != nil {
		writeError(w, err)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	created, err := s.create(r.Context(), res, obj, dry)
	if err != nil {
		writeError(w, err)
		return
	}
	setWarnings(w, res, info.Subresource, created, warnings)
	s.respond(w, r, res, http.StatusCreated, created)
}

// decodeRequest decodes the body into a new object of res and checks its namespace and name
// against the URL.
func (s *Server) decodeRequest(r *http.Request, res *registry.Resource, info requestInfo) (runtime.Object, []string, error) {
	directive, err := parseFieldValidation(r)
	if err != nil {
		return nil, nil, err
	}
	obj, err := res.New()
	if err != nil {
		return nil, nil, err
	}
	warnings, err := decodeBody(r, obj, res.GVK(), directive)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, checkNames(res, obj, info)
}

func checkNames(res *registry.Resource, obj runtime.Object, info requestInfo) error {
	m := mustMeta(obj)
	if res.Namespaced {
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(info.Namespace)
		case info.Namespace:
		default:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		m.SetNamespace("")
	}
	if info.Name != "" && info.Subresource == "" || info.Subresource == "status" || info.Subresource == "finalize" {
		switch m.GetName() {
		case "":
			m.SetName(info.Name)
		case info.Name:
		default:
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
		}
	}
	return nil
}

// create stores a new object after the Kubernetes create steps: namespace admission,
// generateName, system metadata, status reset, defaulting and validation.
func (s *Server) create(ctx context.Context, res *registry.Resource, obj runtime.Object, dry bool) (runtime.Object, error) {
	m := mustMeta(obj)
	if res.Namespaced {
		if err := s.admitNamespace(ctx, m.GetNamespace()); err != nil {
			return nil, err
		}
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(1)
	if res.Rules.PrepareCreate != nil {
		res.Rules.PrepareCreate(obj)
	}
	if res.Rules.Default != nil {
		res.Rules.Default(obj)
	}
	obj = s.fields.track(ctx, res, "", nil, obj)
	if err := validateCreate(res, obj); err != nil {
		return nil, err
	}
	if err := s.guardWrite(ctx, res, obj, nil); err != nil {
		return nil, err
	}
	undo, err := s.claim(ctx, res, obj, nil, dry)
	if err != nil {
		return nil, err
	}
	data, err := encodeForStore(res, obj)
	if err != nil {
		undo()
		return nil, err
	}
	if dry {
		return obj, nil
	}
	rev, err := s.store.Create(ctx, objectKey(res, m.GetNamespace(), m.GetName()), data)
	if err != nil {
		undo()
	}
	if errors.Is(err, store.ErrExists) {
		return nil, apierrors.NewAlreadyExists(res.GroupResource(), m.GetName())
	}
	if err != nil {
		return nil, err
	}
	setResourceVersion(obj, rev)
	return obj, nil
}

func validateCreate(res *registry.Resource, obj runtime.Object) error {
	m := objectMeta(obj)
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if res.Rules.Validate != nil {
		errs = append(errs, res.Rules.Validate(obj)...)
	} else {
		errs = append(errs, validation.ValidateObjectMeta(m, res.Namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(res.GVK().GroupKind(), m.Name, errs)
	}
	return nil
}

// admitNamespace refuses content in a namespace that is missing or being deleted.
func (s *Server) admitNamespace(ctx context.Context, ns string) error {
	nsRes, _ := s.reg.Lookup(namespacesGVR)
	kv, err := s.store.Get(ctx, objectKey(nsRes, "", ns))
	if errors.Is(err, store.ErrNotFound) {
		return apierrors.NewNotFound(nsRes.GroupResource(), ns)
	}
	if err != nil {
		return err
	}
	obj, err := sharedObject(nsRes, kv.Memo, kv.Value, kv.Revision).Object() // decoded once per version
	if err != nil {
		return err
	}
	if mustMeta(obj).GetDeletionTimestamp() != nil {
		return apierrors.NewForbidden(nsRes.GroupResource(), ns,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	}
	return nil
}

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	body, warnings, err := s.decodeRequest(r, res, info)
	if err != nil {
		writeError(w, err)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts := updateOptions{subresource: info.Subresource, dryRun: dry}
	obj, err := s.update(r.Context(), res, info.Namespace, info.Name, opts, func(runtime.Object) (runtime.Object, error) {
		return body.DeepCopyObject(), nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	setWarnings(w, res, info.Subresource, obj, warnings)
	s.respond(w, r, res, http.StatusOK, obj)
}

// updateFunc computes the new object from the current one.
type updateFunc func(current runtime.Object) (runtime.Object, error)

type updateOptions struct {
	subresource string // "", "status", "finalize" or "binding"
	dryRun      bool
	// deleting lets the update set deletionTimestamp/deletionGracePeriodSeconds, which
	// only the delete path may do.
	deleting bool
}

// update is a read-modify-write with optimistic concurrency: tryUpdate sees the current
// object; a resourceVersion it leaves set must still be current (else 409 Conflict); a race
// with another writer re-runs tryUpdate on the newer object.
func (s *Server) update(ctx context.Context, res *registry.Resource, ns, name string, opts updateOptions, tryUpdate updateFunc) (runtime.Object, error) {
	key := objectKey(res, ns, name)
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		old, kv, err := s.current(ctx, res, name, key)
		if err != nil {
			return nil, err
		}
		obj, err := tryUpdate(old.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		if rv := mustMeta(obj).GetResourceVersion(); rv != "" && rv != mustMeta(old).GetResourceVersion() {
			return nil, conflict(res, name)
		}
		obj, err = prepareUpdate(res, opts, obj, old)
		if err != nil {
			return nil, err
		}
		if err := s.guardWrite(ctx, res, obj, old); err != nil {
			return nil, err
		}
		undo, err := s.claim(ctx, res, obj, old, opts.dryRun)
		if err != nil {
			return nil, err
		}
		obj = s.fields.track(ctx, res, opts.subresource, old, obj)
		data, err := encodeForStore(res, obj)
		if err != nil {
			undo()
			return nil, err
		}
		if bytes.Equal(data, kv.Value) || opts.dryRun {
			// Nothing changed: like Kubernetes, no new resourceVersion and no watch event.
			setResourceVersion(obj, kv.Revision)
			return obj, nil
		}
		deleted := finalized(res, obj)
		if deleted {
			_, _, err = s.store.Delete(ctx, key, kv.Revision)
		} else {
			var rev int64
			rev, err = s.store.Update(ctx, key, data, kv.Revision)
			setResourceVersion(obj, rev)
		}
		if err != nil {
			undo()
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			s.release(ctx, res, obj, old, deleted)
		}
		return obj, err
	}
	return nil, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("too many concurrent writers, gave up after %d attempts", maxUpdateAttempts))
}

// current reads the object at key as it is now, with its store revision.
func (s *Server) current(ctx context.Context, res *registry.Resource, name, key string) (runtime.Object, store.KV, error) {
	kv, err := s.store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, kv, apierrors.NewNotFound(res.GroupResource(), name)
	}
	if err != nil {
		return nil, kv, err
	}
	obj, err := decodeStored(res, kv.Value, kv.Revision)
	return obj, kv, err
}

func conflict(res *registry.Resource, name string) error {
	return apierrors.NewConflict(res.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// prepareUpdate applies what a client may not change: system metadata always; the status on
// the main resource and everything but status on the status subresource.
func prepareUpdate(res *registry.Resource, opts updateOptions, obj, old runtime.Object) (runtime.Object, error) {
	var err error
	switch sub := opts.subresource; {
	case sub == "status":
		obj, err = withField(old, obj, "status")
	case sub == "finalize":
		obj, err = withField(old, obj, "spec")
	case sub == "" && res.HasSubresource("status"):
		obj, err = withField(obj, old, "status")
	}
	if err != nil {
		return nil, err
	}
	m, om := objectMeta(obj), objectMeta(old)
	if m.UID != "" && m.UID != om.UID {
		// A uid in the body is a precondition (controllers adopting by patch rely on it).
		return nil, apierrors.NewConflict(res.GroupResource(), om.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.UID, om.UID))
	}
	m.UID, m.CreationTimestamp, m.Generation = om.UID, om.CreationTimestamp, om.Generation
	if !opts.deleting {
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = om.DeletionTimestamp, om.DeletionGracePeriodSeconds
	}
	m.ResourceVersion = om.ResourceVersion
	if res.Rules.PrepareUpdate != nil {
		res.Rules.PrepareUpdate(obj, old)
	}
	if res.Rules.Default != nil {
		res.Rules.Default(obj)
	}
	if specChanged(obj, old) {
		m.Generation++
	}
	oldMeta := om
	if opts.deleting { // the delete path itself set these; nothing else may
		oldMeta = om.DeepCopy()
		oldMeta.DeletionTimestamp, oldMeta.DeletionGracePeriodSeconds = m.DeletionTimestamp, m.DeletionGracePeriodSeconds
		oldMeta.Finalizers = m.Finalizers // the garbage collector's finalizer comes with the deletion
	}
	errs := validation.ValidateObjectMetaUpdate(m, oldMeta, field.NewPath("metadata"))
	switch {
	case res.Rules.ValidateUpdate != nil:
		errs = append(errs, res.Rules.ValidateUpdate(obj, old)...)
	case res.Rules.Validate != nil:
		errs = append(errs, res.Rules.Validate(obj)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(res.GVK().GroupKind(), m.Name, errs)
	}
	return obj, nil
}

// finalizing tells whether finalizers (metadata's or the kind's own) hold the object.
func finalizing(res *registry.Resource, obj runtime.Object) bool {
	return len(mustMeta(obj).GetFinalizers()) > 0 || (res.Rules.Finalizing != nil && res.Rules.Finalizing(obj))
}

// finalized tells whether an object marked for deletion has no finalizer and no grace
// period left, so the update that got it there completes the deletion.
func finalized(res *registry.Resource, obj runtime.Object) bool {
	m := mustMeta(obj)
	if m.GetDeletionTimestamp() == nil || finalizing(res, obj) {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

func specChanged(obj, old runtime.Object) bool {
	a, errA := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	b, errB := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	if errA != nil || errB != nil {
		return false
	}
	return !equality.Semantic.DeepEqual(a["spec"], b["spec"])
}

// withField returns a copy of base whose top-level field (e.g. "status") is taken from src.
func withField(base, src runtime.Object, name string) (runtime.Object, error) {
	b, err := runtime.DefaultUnstructuredConverter.ToUnstructured(base)
	if err != nil {
		return nil, err
	}
	sm, err := runtime.DefaultUnstructuredConverter.ToUnstructured(src)
	if err != nil {
		return nil, err
	}
	if v, ok := sm[name]; ok {
		b[name] = v
	} else {
		delete(b, name)
	}
	out := base.DeepCopyObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// markDeleting sets deletionTimestamp now+grace, shortening (never lengthening) an earlier one.
func markDeleting(obj runtime.Object, grace int64) {
	m := mustMeta(obj)
	if cur := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() != nil && cur != nil && *cur <= grace {
		return
	}
	ts := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
	m.SetDeletionTimestamp(&ts)
	m.SetDeletionGracePeriodSeconds(&grace)
}
