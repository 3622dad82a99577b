package generic

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// prepareUpdate applies what a client may not change: system metadata always; the status on
// the main resource and everything but status on the status subresource; then the kind's
// preparation, defaulting and generation. validateUpdate checks the result.
func prepareUpdate(res *registry.Resource, opts UpdateOptions, obj, old runtime.Object) (runtime.Object, error) {
	var err error
	switch sub := opts.Subresource; {
	case sub == "status" || sub == "approval":
		req := obj
		obj, err = withField(old, obj, "status")
		if err == nil {
			*ObjectMeta(obj) = *ObjectMeta(req).DeepCopy() // system fields are reset below
			if keep := res.Rules.StatusMetadata; keep != nil {
				keep(ObjectMeta(obj), ObjectMeta(old))
			}
		}
	case sub == "finalize" || sub == "" && res.HasSubresource("status") && !opts.deleting:
		// Finalize keeps only the status, as kube's namespace finalize strategy. (A
		// deletion's write is the stored object; only MarkDeleted and Deleting change its
		// status.)
		obj, err = withField(obj, old, "status")
	}
	if err != nil {
		return nil, err
	}
	m, om := ObjectMeta(obj), ObjectMeta(old)
	if m.UID == "" { // another one fails validation: the uid is immutable
		m.UID = om.UID
	}
	m.CreationTimestamp, m.Generation = om.CreationTimestamp, om.Generation
	if opts.deleting && om.Generation > 0 && om.DeletionTimestamp == nil && m.DeletionTimestamp != nil && res.Rules.MarkDeleted == nil {
		m.Generation++ // a deletion starting is a change of the object's intent, as in Kubernetes
	}
	if !opts.deleting {
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = om.DeletionTimestamp, om.DeletionGracePeriodSeconds
	}
	m.ResourceVersion = om.ResourceVersion
	// A deletion's write skips the strategy, as kube's does.
	if prepare := updateRules(res, opts.Subresource).Prepare; prepare != nil && !opts.deleting {
		prepare(obj, old)
	}
	if res.Rules.Default != nil {
		res.Rules.Default(obj)
	}
	// A subresource's own strategy (status) counts no change of intent; the kind's does.
	intent := res.Rules.GenerationChanged != nil && opts.Subresource != "status" && res.Rules.GenerationChanged(obj, old)
	if (res.Rules.Generation && specChanged(obj, old)) || intent {
		m.Generation++
	}
	return obj, nil
}

// validateUpdate checks an update prepared by prepareUpdate: its metadata against old's,
// then the kind's (or the subresource's) rules.
func validateUpdate(res *registry.Resource, opts UpdateOptions, obj, old runtime.Object) error {
	validate := updateRules(res, opts.Subresource).Validate
	m, om := ObjectMeta(obj), ObjectMeta(old)
	if opts.deleting { // the delete path itself set these; nothing else may (the kind's own validation included)
		old = old.DeepCopyObject()
		om = ObjectMeta(old)
		om.DeletionTimestamp, om.DeletionGracePeriodSeconds = m.DeletionTimestamp, m.DeletionGracePeriodSeconds
		om.Finalizers = m.Finalizers // the garbage collector's and the kind's finalizers come with the deletion
	}
	errs := append(validation.ValidateObjectMetaUpdate(m, om, field.NewPath("metadata")), validateFinalizerNames(res, m)...)
	switch {
	case validate != nil:
		errs = append(errs, validate(obj, old)...)
	case res.Rules.Validate != nil:
		errs = append(errs, res.Rules.Validate(obj)...)
	}
	if len(errs) > 0 {
		return invalid(res, obj, m.Name, errs)
	}
	return nil
}

// updateRules are an update's strategy: the subresource's own, else the kind's.
func updateRules(res *registry.Resource, subresource string) registry.SubresourceRules {
	if sr, ok := res.Rules.SubresourceUpdates[subresource]; ok {
		return sr
	}
	return registry.SubresourceRules{Prepare: res.Rules.PrepareUpdate, Validate: res.Rules.ValidateUpdate}
}

// finalizing tells whether finalizers (metadata's or the kind's own) hold the object.
func finalizing(res *registry.Resource, obj runtime.Object) bool {
	return len(MustMeta(obj).GetFinalizers()) > 0 || (res.Rules.Finalizing != nil && res.Rules.Finalizing(obj))
}

// finalized tells whether an object marked for deletion has no finalizer and no grace
// period left, so the update that got it there completes the deletion.
func finalized(res *registry.Resource, obj runtime.Object) bool {
	m := MustMeta(obj)
	if m.GetDeletionTimestamp() == nil || finalizing(res, obj) {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// specChanged tells whether an update changes the spec, as Kubernetes' strategies compare
// it (equality.Semantic on the typed field: 0.1 and 100m are one quantity, nil and empty
// lists are alike). Typed, because converting both objects to maps cost 60 µs per update.
func specChanged(obj, old runtime.Object) bool {
	a, okA := topField(obj, "spec")
	b, okB := topField(old, "spec")
	if !okA || !okB {
		return false
	}
	return !equality.Semantic.DeepEqual(a.Interface(), b.Interface())
}

// withField returns a copy of base whose top-level field (e.g. "status") is taken from src;
// a kind without that field comes back as a copy of base.
func withField(base, src runtime.Object, name string) (runtime.Object, error) {
	out := base.DeepCopyObject()
	to, ok := topField(out, name)
	if !ok {
		return out, nil
	}
	from, ok := topField(src.DeepCopyObject(), name)
	if !ok {
		return nil, fmt.Errorf("%T has no field %q", src, name)
	}
	to.Set(from)
	return out, nil
}

// topField is the struct field of obj (a pointer to a struct, as every registry kind is)
// whose JSON name is name.
func topField(obj runtime.Object, name string) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	v = v.Elem()
	i, ok := jsonFieldIndex(v.Type(), name)
	if !ok {
		return reflect.Value{}, false
	}
	return v.Field(i), true
}

type typeField struct {
	t    reflect.Type
	name string
}

var jsonFields sync.Map // typeField -> field index, or -1 for none

func jsonFieldIndex(t reflect.Type, name string) (int, bool) {
	k := typeField{t, name}
	if i, ok := jsonFields.Load(k); ok {
		return i.(int), i.(int) >= 0
	}
	idx := -1
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			idx = i
			break
		}
	}
	jsonFields.Store(k, idx)
	return idx, idx >= 0
}

// markDeleting marks an object that finalizers hold as kube's markAsDeleting does: no grace
// period, deletionTimestamp now unless it was earlier.
func markDeleting(obj runtime.Object) {
	m := MustMeta(obj)
	now := metav1.Now()
	if ts := m.GetDeletionTimestamp(); ts == nil || ts.After(now.Time) {
		m.SetDeletionTimestamp(&now)
	}
	m.SetDeletionGracePeriodSeconds(ptr.To[int64](0))
}
