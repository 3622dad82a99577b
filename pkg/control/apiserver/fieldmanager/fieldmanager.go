// Package fieldmanager keeps metadata.managedFields, who set which field of an object, and
// runs the merges of server-side apply, with apimachinery's managedfields, as
// k8s.io/apiserver's pkg/endpoints/handlers/fieldmanager: a field manager per resource and
// status subresource and one for the scale subresources, and who a write request writes as
// (Owner), which the write path reads when it records the write (Track).
package fieldmanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Managers keep metadata.managedFields (who set which field) and run server-side apply,
// with apimachinery's managedfields: one field manager per resource and per status
// subresource. A built-in kind's works on the type converter built from the generated
// OpenAPI definitions; a custom resource's on the one its resource brings (from its
// CustomResourceDefinition's schema).
type Managers struct {
	types     *goTypes
	convertor versionConvertor
	log       *slog.Logger
	// builtin are the managers of the resources the server started with; read-only.
	builtin map[fieldManagerKey]*managedfields.FieldManager
	// unavailable are the built-in resources served without managed fields, and why.
	unavailable map[schema.GroupVersionResource]error
	// scale tracks writes through the scale subresources of built-in and custom resources,
	// on their autoscaling/v1 Scale; nil if it could not be built (logged).
	scale *managedfields.FieldManager

	mu sync.Mutex
	// custom are the managers of the resources that bring their type converter (custom
	// resources), built at their first write and again when their resource is replaced:
	// its CustomResourceDefinition changed.
	custom map[fieldManagerKey]customManager
}

type fieldManagerKey struct {
	gvr         schema.GroupVersionResource
	subresource string // "" or "status"
}

// customManager is the field manager of a custom resource and the resource it was built for.
type customManager struct {
	res     *registry.Resource
	manager *managedfields.FieldManager
	err     error
}

// New builds the field managers of reg's built-in resources; a resource whose
// kind has no generated definition is served without managed fields, and logged.
func New(reg *registry.Registry, log *slog.Logger) *Managers {
	tc, tcErr := openapi.TypeConverter()
	f := &Managers{
		types:     &goTypes{TypeConverter: tc, kinds: map[schema.GroupVersionKind]*typed.TypedValue{}},
		convertor: newVersionConvertor(reg), log: log,
		builtin: map[fieldManagerKey]*managedfields.FieldManager{}, unavailable: map[schema.GroupVersionResource]error{},
		custom: map[fieldManagerKey]customManager{},
	}
	for _, res := range reg.Resources() {
		if res.TypeConverter != nil {
			continue
		}
		err := tcErr
		if err == nil {
			err = f.add(res)
		}
		if err != nil {
			log.Error("managed fields and server-side apply unavailable", "resource", res.GroupVersionResource.String(), "err", err)
			f.unavailable[res.GroupVersionResource] = err
		}
	}
	if tcErr == nil {
		if err := f.addScale(); err != nil {
			log.Error("managed fields of scale subresources unavailable", "err", err)
		}
	}
	return f
}

// addScale builds the field manager of the scale subresources, as kube-apiserver's for the
// kind autoscaling/v1 Scale.
func (f *Managers) addScale() error {
	gvk := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	if err := f.types.learn(&autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}}); err != nil {
		return err
	}
	m, err := managedfields.NewDefaultFieldManager(f.types, f.convertor, scheme.Scheme, scheme.Scheme, gvk, gvk.GroupVersion(), "scale", nil)
	f.scale = m
	return err
}

func (f *Managers) add(res *registry.Resource) error {
	obj, err := res.New()
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK())
	if err := f.types.learn(obj); err != nil {
		return fmt.Errorf("kind %s has no OpenAPI definition (add its package to hack/update-openapi.sh): %w", res.GVK(), err)
	}
	for _, sub := range append([]string{""}, tracked...) {
		if !managesFields(res, sub) {
			continue
		}
		m, err := f.newManager(f.types, res, sub)
		if err != nil {
			return err
		}
		f.builtin[fieldManagerKey{res.GroupVersionResource, sub}] = m
	}
	return nil
}

// tracked are the subresources whose writes are tracked beside the resource's own. Others
// (binding, scale) are not, or not this way.
var tracked = []string{"status", "finalize", "approval", "resize", "ephemeralcontainers"}

// managesFields tells whether writes through a (sub)resource are tracked.
func managesFields(res *registry.Resource, subresource string) bool {
	return subresource == "" || slices.Contains(tracked, subresource) && res.HasSubresource(subresource)
}

// newManager builds the field manager of a resource or of one of its tracked subresources.
func (f *Managers) newManager(tc managedfields.TypeConverter, res *registry.Resource, subresource string) (*managedfields.FieldManager, error) {
	build := managedfields.NewDefaultFieldManager
	if res.TypeConverter != nil {
		build = managedfields.NewDefaultCRDFieldManager // as apiextensions-apiserver builds it
	}
	return build(tc, f.convertor, registryDefaulter{res}, resourceCreater{res}, res.GVK(), res.GroupVersion(), subresource, resetFields(res, subresource))
}

// Manager is the field manager of a resource or of its status subresource: nil for the
// subresources not tracked, an error for a resource whose type converter could not be built.
func (f *Managers) Manager(res *registry.Resource, subresource string) (*managedfields.FieldManager, error) {
	key := fieldManagerKey{res.GroupVersionResource, subresource}
	if res.TypeConverter == nil {
		return f.builtin[key], f.unavailable[res.GroupVersionResource]
	}
	if !managesFields(res, subresource) {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.custom[key]; ok && c.res == res {
		return c.manager, c.err
	}
	c := customManager{res: res}
	tc, err := res.TypeConverter()
	if err == nil {
		c.manager, err = f.newManager(tc, res, subresource)
	}
	if err != nil {
		c.err = fmt.Errorf("building the type converter of %s: %w", res.GVK(), err)
		f.log.Error("managed fields and server-side apply unavailable", "resource", res.GroupVersionResource.String(), "err", err)
	}
	// The managers of resources no longer served go with this change.
	for k, old := range f.custom {
		if cur, ok := f.convertor.reg.Lookup(k.gvr); !ok || cur != old.res {
			delete(f.custom, k)
		}
	}
	f.custom[key] = c
	return c.manager, c.err
}

// resourceCreater makes the empty objects of a resource's kind, which the scheme does not
// know for a custom resource.
type resourceCreater struct{ res *registry.Resource }

func (c resourceCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk == c.res.GVK() {
		return c.res.New()
	}
	return scheme.Scheme.New(gvk)
}

// goTypes converts Go objects of the kinds it has learnt to structured-merge-diff values
// without validating them against their schema: the schema is generated from these very Go
// types, so a Go value always fits it (a missing list key still fails, when the field manager
// compares). Validating each object on every write was a third of the field manager's time.
// Unstructured objects (apply configurations) are validated as usual.
type goTypes struct {
	managedfields.TypeConverter
	kinds map[schema.GroupVersionKind]*typed.TypedValue // a value of each kind, for its schema; read-only once serving
}

// learn validates an empty object of a kind and remembers the kind's schema.
func (g *goTypes) learn(obj runtime.Object) error {
	tv, err := g.TypeConverter.ObjectToTyped(obj)
	if err == nil {
		g.kinds[obj.GetObjectKind().GroupVersionKind()] = tv
	}
	return err
}

func (g *goTypes) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	kind, ok := g.kinds[obj.GetObjectKind().GroupVersionKind()]
	if _, unstructured := obj.(runtime.Unstructured); !ok || unstructured {
		return g.TypeConverter.ObjectToTyped(obj, opts...)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, err
	}
	return typed.AsTypedUnvalidated(v, kind.Schema(), kind.TypeRef()), nil
}

// resetFields are the fields a write through (sub)resource cannot change, so nobody comes to
// own them by it: the kind's ManagedFieldsReset, else the status through the main resource
// and the spec through status.
func resetFields(res *registry.Resource, subresource string) map[fieldpath.APIVersion]fieldpath.Filter {
	gv := fieldpath.APIVersion(res.GroupVersion().String())
	if f, ok := res.Rules.ManagedFieldsReset[subresource]; ok {
		return map[fieldpath.APIVersion]fieldpath.Filter{gv: f}
	}
	var reset string
	switch {
	case subresource == "status":
		reset = "spec"
	case res.HasSubresource("status"):
		reset = "status"
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		gv: fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie(reset))),
	}
}

// registryDefaulter defaults what server-side apply merged, as the scheme's defaulting
// functions do in Kubernetes.
type registryDefaulter struct{ res *registry.Resource }

func (d registryDefaulter) Default(obj runtime.Object) {
	if d.res.Rules.Default != nil {
		d.res.Rules.Default(obj)
	}
}

type fieldOwnerKey struct{}

// WithOwner is ctx for a write by o, which Track records as o's.
func WithOwner(ctx context.Context, o *Owner) context.Context {
	return context.WithValue(ctx, fieldOwnerKey{}, o)
}

// Owner is who a write request writes as.
type Owner struct {
	Manager string
	// Apply marks server-side apply; Applied holds the managed fields its merge computed,
	// which the write keeps even where it takes the rest of the metadata from the stored
	// object (the status subresource).
	Apply   bool
	Applied []metav1.ManagedFieldsEntry
	// reset marks a write of managedFields [{}], which clears them.
	reset bool
}

// TakeManagedFieldsReset takes managedFields [{}], kube's way to clear them, off an object a
// request writes, for Track to clear them: the write's validation, which runs before Track
// here (after the field manager in Kubernetes), refuses the empty entry.
func TakeManagedFieldsReset(ctx context.Context, obj runtime.Object) {
	owner, ok := ctx.Value(fieldOwnerKey{}).(*Owner)
	m := generic.ObjectMeta(obj)
	if !ok || m == nil {
		return
	}
	owner.reset = len(m.ManagedFields) == 1 && equality.Semantic.DeepEqual(m.ManagedFields[0], metav1.ManagedFieldsEntry{})
	if owner.reset {
		m.ManagedFields = nil
	}
}

// WithFieldOwner tells the write path who a POST, PUT or PATCH writes as: ?fieldManager=, or
// else the program name of the User-Agent, as in Kubernetes. It refuses a fieldManager or a
// fieldValidation kube-apiserver's CreateOptions, UpdateOptions or PatchOptions refuse.
func WithFieldOwner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var options string
		switch r.Method {
		case http.MethodPost:
			options = "CreateOptions"
		case http.MethodPut:
			options = "UpdateOptions"
		case http.MethodPatch:
			options = "PatchOptions"
		default:
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		manager := q.Get("fieldManager")
		errs := metav1validation.ValidateFieldManager(manager, field.NewPath("fieldManager"))
		errs = append(errs, metav1validation.ValidateFieldValidation(field.NewPath("fieldValidation"), q.Get("fieldValidation"))...)
		if len(errs) > 0 {
			responsewriters.WriteError(w, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: options}, "", errs))
			return
		}
		if manager == "" {
			manager = managerFromUserAgent(r.UserAgent())
		}
		next.ServeHTTP(w, r.WithContext(WithOwner(r.Context(), &Owner{Manager: manager})))
	})
}

// managerFromUserAgent is the User-Agent up to its first "/", printable and at most as long
// as a field manager may be.
func managerFromUserAgent(ua string) string {
	name, _, _ := strings.Cut(ua, "/")
	var b strings.Builder
	for _, r := range name {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Track records a write in obj's managedFields: an Update by the request's field manager, or
// what server-side apply merged. live is the stored object, nil on create. Writes the server
// makes on its own (deletion) and subresources without a field manager (binding)
// leave managedFields as they are.
func (f *Managers) Track(ctx context.Context, res *registry.Resource, subresource string, live, obj runtime.Object) runtime.Object {
	owner, ok := ctx.Value(fieldOwnerKey{}).(*Owner)
	if !ok {
		return obj
	}
	if owner.Apply {
		generic.ObjectMeta(obj).ManagedFields = owner.Applied
		if live != nil {
			keepTimestampsOfNoOp(live, obj)
		}
		return obj
	}
	if subresource == "scale" && f.scale != nil && live != nil {
		return f.trackScale(res, owner.Manager, live, obj)
	}
	m, _ := f.Manager(res, subresource) // an error was logged as the manager was built
	if m == nil {
		return obj
	}
	if live == nil {
		empty, err := res.New()
		if err != nil {
			return obj
		}
		live = empty
	}
	if owner.reset {
		generic.ObjectMeta(obj).ManagedFields = []metav1.ManagedFieldsEntry{{}}
	}
	return m.UpdateNoErrors(live, obj, owner.Manager)
}

// trackScale records a write through the scale subresource as kube-apiserver does: the
// object's entries are seen as its Scale's, the Scale's field manager records the write, and
// the result is mapped back, so that the writer owns spec.replicas (with subresource scale)
// and its previous owner loses it.
func (f *Managers) trackScale(res *registry.Resource, manager string, live, obj runtime.Object) runtime.Object {
	handler := scaleHandler(res, live)
	entries, err := handler.ToSubresource()
	if err != nil {
		return obj // entries that do not decode: kept as they are, as on any write
	}
	before, after := scaleOf(res, live), scaleOf(res, obj)
	before.ManagedFields = entries
	scale := f.scale.UpdateNoErrors(before, after, manager)
	if entries, err = handler.ToParent(generic.ObjectMeta(scale).ManagedFields); err == nil {
		generic.ObjectMeta(obj).ManagedFields = entries
	}
	return obj
}

// scaleHandler maps the managed fields of parent, an object with a scale subresource, to
// and from its Scale's.
func scaleHandler(res *registry.Resource, parent runtime.Object) *managedfields.ScaleHandler {
	gv := res.GroupVersion()
	replicas := res.Rules.Scale.ReplicasPaths
	if replicas == nil {
		replicas = managedfields.ResourcePathMappings{gv.String(): fieldpath.MakePathOrDie("spec", "replicas")}
	}
	return managedfields.NewScaleHandler(generic.ObjectMeta(parent).ManagedFields, gv, replicas)
}

// ApplyScale is server-side apply through the scale subresource, as kube-apiserver's patch
// handler runs it on the Scale that parent's scale REST makes: the Scale's field manager
// merges the applied configuration into cur, with parent's entries seen as the Scale's. It
// returns the merged Scale and parent's entries after the apply.
func (f *Managers) ApplyScale(res *registry.Resource, parent runtime.Object, cur *autoscalingv1.Scale, patch *unstructured.Unstructured, manager string, force bool) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, error) {
	if f.scale == nil {
		return nil, nil, apierrors.NewInternalError(errors.New("server-side apply of scale subresources is unavailable"))
	}
	handler := scaleHandler(res, parent)
	entries, err := handler.ToSubresource()
	if err != nil {
		return nil, nil, responsewriters.UnknownError(err)
	}
	cur.ManagedFields = entries
	merged, err := f.scale.Apply(cur, patch, manager, force)
	if status := apierrors.APIStatus(nil); err != nil && !errors.As(err, &status) {
		err = ApplyError(err)
	}
	if err != nil {
		return nil, nil, err
	}
	scale, ok := merged.(*autoscalingv1.Scale)
	if !ok {
		return nil, nil, responsewriters.UnknownError(fmt.Errorf("server-side apply of a Scale made a %T", merged))
	}
	if entries, err = handler.ToParent(scale.ManagedFields); err != nil {
		return nil, nil, responsewriters.UnknownError(err)
	}
	return scale, entries, nil
}

// scaleOf is the part of obj's Scale its field manager compares: metadata and spec.replicas.
func scaleOf(res *registry.Resource, obj runtime.Object) *autoscalingv1.Scale {
	m := generic.ObjectMeta(obj)
	replicas, _, _ := res.Rules.Scale.Replicas(obj)
	return &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: autoscalingv1.SchemeGroupVersion.String(), Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, CreationTimestamp: m.CreationTimestamp},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
}

// keepTimestampsOfNoOp keeps the stored managedFields when an apply changed nothing but their
// timestamps, so that re-applying the same configuration writes nothing, as in Kubernetes.
func keepTimestampsOfNoOp(live, obj runtime.Object) {
	lm, om := generic.ObjectMeta(live), generic.ObjectMeta(obj)
	if len(lm.ManagedFields) != len(om.ManagedFields) {
		return
	}
	for i := range lm.ManagedFields {
		a, b := lm.ManagedFields[i], om.ManagedFields[i]
		a.Time, b.Time = nil, nil
		if !equality.Semantic.DeepEqual(a, b) {
			return
		}
	}
	applied := om.ManagedFields
	om.ManagedFields = lm.ManagedFields
	if !equality.Semantic.DeepEqual(live, obj) {
		om.ManagedFields = applied
	}
}

// ApplyError words the field manager's plain errors. One that the applied configuration
// does not fit its schema (an unknown field, a wrong type) is the client's: a 400 with
// kube's text, where kube-apiserver 1.36 answers a reasonless 500 (kubernetes#139253,
// whose fix makes it this 400). The rest are kube's 500.
func ApplyError(err error) error {
	if strings.HasPrefix(err.Error(), "failed to create typed patch object") {
		return apierrors.NewBadRequest(err.Error())
	}
	return responsewriters.UnknownError(err)
}
