package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/fieldmanager"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	patchType, opts, err := patchOptions(r, res)
	if err != nil {
		return err
	}
	if patchType == types.ApplyYAMLPatchType {
		return s.serveApply(w, r, res, info, opts)
	}
	directive := parseFieldValidation(r)
	patch, err := readRaw(r)
	if err != nil {
		return err
	}
	filters.AuditRequestPatch(r.Context(), patch)
	update := generic.UpdateOptions{Subresource: info.Subresource, DryRun: len(opts.DryRun) > 0}
	obj, err := s.objects.Update(r.Context(), res, info.Namespace, info.Name, update, func(cur runtime.Object) (runtime.Object, error) {
		out, strict, err := applyPatch(res, patchType, cur, patch, directive)
		if err != nil {
			return nil, err
		}
		addWarnings(w, strict)
		fieldmanager.TakeManagedFieldsReset(r.Context(), out)
		return out, checkNames(res, out, info)
	})
	if err != nil {
		return err
	}
	return s.respond(w, r, res, http.StatusOK, obj)
}

// serveApply is server-side apply (PATCH application/apply-patch+yaml): the applied
// configuration is merged into the stored object by field ownership, conflicting with other
// managers' fields unless forced; an object that does not exist yet is created.
func (s *Server) serveApply(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, opts metav1.PatchOptions) error {
	m, err := s.fields.Manager(res, info.Subresource)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("server-side apply of %s is unavailable: %w", res.Resource, err))
	}
	if m == nil {
		return apierrors.NewMethodNotSupported(res.GroupResource(), "apply to "+info.Subresource)
	}
	patch, warnings, refused, err := decodeApplyConfiguration(r, opts.FieldValidation)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	owner := &fieldmanager.Owner{Manager: opts.FieldManager, Apply: true}
	ctx := fieldmanager.WithOwner(r.Context(), owner)
	force := opts.Force != nil && *opts.Force
	dry := len(opts.DryRun) > 0
	apply := func(live runtime.Object) (runtime.Object, error) {
		merged, err := m.Apply(live, patch.DeepCopy(), opts.FieldManager, force)
		if status := apierrors.APIStatus(nil); err != nil && !errors.As(err, &status) {
			err = fieldmanager.ApplyError(err)
		}
		if err == nil {
			err = refused
		}
		if err != nil {
			return nil, err
		}
		owner.Applied = mustMeta(merged).GetManagedFields()
		if err := checkName(mustMeta(merged).GetName(), info.Name); err != nil {
			return nil, err
		}
		return merged, checkNames(res, merged, info)
	}
	// Apply to a missing object creates it; one that appears meanwhile is applied to.
	for range 2 {
		obj, err := s.objects.Update(ctx, res, info.Namespace, info.Name, generic.UpdateOptions{Subresource: info.Subresource, DryRun: dry}, apply)
		if err == nil {
			return s.respond(w, r, res, http.StatusOK, obj)
		}
		if !apierrors.IsNotFound(err) || info.Subresource != "" {
			return err
		}
		empty, err := res.New()
		if err == nil {
			obj, err = apply(empty)
		}
		if err == nil && mustMeta(obj).GetUID() != "" {
			err = apierrors.NewConflict(res.GroupResource(), info.Name,
				fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", mustMeta(obj).GetUID()))
		}
		if err == nil {
			setRequester(ctx, res, obj)
			obj, err = s.objects.Create(ctx, res, obj, generic.CreateOptions{DryRun: dry})
		}
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		return s.respond(w, r, res, http.StatusCreated, obj)
	}
	return apierrors.NewConflict(res.GroupResource(), info.Name, errors.New("the object was created and deleted concurrently; apply again"))
}

// decodeApplyConfiguration reads an apply configuration (YAML or JSON); duplicate fields are
// warnings or, under ?fieldValidation=Strict, refused: the error the apply returns once the
// field manager merged it, as kube-apiserver checks them after the merge (a conflict comes
// first). Its kind and its fields are the field manager's to check.
func decodeApplyConfiguration(r *http.Request, validation string) (patch *unstructured.Unstructured, warnings []string, refused, err error) {
	data, err := readRaw(r)
	if err != nil {
		return nil, nil, nil, err
	}
	if filters.Auditing(r.Context()) {
		if asJSON, err := yaml.YAMLToJSON(data); err == nil { // the event is JSON: a YAML body would break it
			filters.AuditRequestPatch(r.Context(), asJSON)
		}
	}
	patch = &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(data, &patch.Object); err != nil {
		return nil, nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if validation != metav1.FieldValidationIgnore {
		if err := yaml.UnmarshalStrict(data, &map[string]any{}); err != nil {
			if validation == metav1.FieldValidationStrict {
				return patch, nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err)), nil
			}
			warnings = append(warnings, strictDecodingWarnings([]error{err})...)
		}
	}
	return patch, warnings, nil, nil
}

// patchOptions are a PATCH's patch type and options, refused as kube-apiserver refuses them.
func patchOptions(r *http.Request, res *registry.Resource) (types.PatchType, metav1.PatchOptions, error) {
	var opts metav1.PatchOptions
	patchType, err := patchType(r, res)
	if err != nil {
		return "", opts, err
	}
	if err := scheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.Unversioned, &opts); err != nil {
		return "", opts, apierrors.NewBadRequest(err.Error())
	}
	if errs := metav1validation.ValidatePatchOptions(&opts, patchType); len(errs) > 0 {
		return "", opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return patchType, opts, nil
}

// maxJSONPatchOperations is the most operations a JSON patch may have, as in kube-apiserver.
const maxJSONPatchOperations = 10000

// kube-apiserver applies JSON and merge patches with json-patch v4, whose copy operations
// may add at most AccumulatedCopySizeLimit bytes, a process-wide setting it makes 3 MiB
// (JSONPatchMaxCopyBytes) as it starts.
func init() { jsonpatch.AccumulatedCopySizeLimit = 3 << 20 }

// applyPatch applies a JSON, merge or strategic-merge patch to cur and decodes the result
// into a new object of res, with the statuses kube-apiserver's patch handler gives
// (apiserver/pkg/endpoints/handlers/patch.go): a patch that does not decode is 400; a JSON
// patch that does not apply is 422 with kube's generic message only; a result that is not
// an object of the kind is 422 on the field "patch"; strategic-merge errors keep kube's
// codes (400 for a malformed directive, 422 for lists of lists, 500 for the rest). Unknown
// and duplicate fields are warnings under Warn and a 422 under Strict. A JSON patch may have
// at most maxJSONPatchOperations operations (else 413) and its copies may add at most 3 MiB
// to the object (else 422), so a small patch cannot amplify itself into gigabytes.
func applyPatch(res *registry.Resource, pt types.PatchType, cur runtime.Object, patch []byte, directive fieldValidation) (runtime.Object, []string, error) {
	out, err := res.New()
	if err != nil {
		return nil, nil, err
	}
	checkStrict := directive == validationWarn || directive == validationStrict
	var strictErrs []error
	if pt == types.StrategicMergePatchType {
		if strictErrs, err = strategicMergePatch(cur, patch, out, directive); err != nil {
			return nil, nil, err
		}
		return out, strictWarnings(strictErrs, directive), nil
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		if checkStrict {
			var ops []jsonPatchOp
			if strictErrs, err = kjson.UnmarshalStrict(patch, &ops); err != nil {
				// The type is named after kube's package (endpoints/handlers), as its error reads.
				msg := strings.ReplaceAll(err.Error(), "apiserver.jsonPatchOp", "handlers.jsonPatchOp")
				return nil, nil, apierrors.NewBadRequest("error decoding patch: " + msg)
			}
			for i, e := range strictErrs {
				strictErrs[i] = fmt.Errorf("json patch %v", e)
			}
		}
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		if err = rootWithoutValue(p); err == nil {
			patched, err = p.Apply(orig)
		}
		if err != nil {
			return nil, nil, unprocessable(err)
		}
	case types.MergePatchType:
		if checkStrict {
			if strictErrs, err = kjson.UnmarshalStrict(patch, &map[string]any{}); err != nil {
				return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
		}
		if patched, err = jsonpatch.MergePatch(orig, patch); errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		} else if err != nil {
			return nil, nil, responsewriters.UnknownError(err)
		}
	default:
		return nil, nil, negotiation.NewUnsupportedMediaTypeError(patchTypes(res))
	}
	if err := patchedKindError(patched, res.GVK()); err != nil {
		return nil, nil, invalidPatch(string(patched), err)
	}
	decodeStrict, err := kjson.UnmarshalStrict(patched, out)
	if err != nil {
		return nil, nil, invalidPatch(string(patched), err)
	}
	strictErrs = append(strictErrs, decodeStrict...)
	if res.Rules.UnknownFields != nil {
		// The fields a custom resource's schema does not declare are its decoder's strict
		// errors in kube-apiserver, after the patch's own.
		msgs, err := res.Rules.UnknownFields(out)
		if err != nil {
			return nil, nil, err
		}
		if checkStrict {
			for _, msg := range msgs {
				strictErrs = append(strictErrs, errors.New(msg))
			}
		}
	}
	if directive == validationStrict && len(strictErrs) > 0 {
		return nil, nil, invalidPatch(string(patched), runtime.NewStrictDecodingError(strictErrs))
	}
	return out, strictWarnings(strictErrs, directive), nil
}

// patchedKindError is kube's decoder's error when a JSON or merge patch made a built-in
// object of another kind or an unknown version (it converts one of another version).
func patchedKindError(patched []byte, want schema.GroupVersionKind) error {
	if registry.IsCustom(want) {
		return nil
	}
	actual, err := jsonserializer.DefaultMetaFactory.Interpret(patched)
	if err != nil {
		return err
	}
	return decoderKindError(withDefaults(*actual, want), want)
}

// jsonPatchOp is an operation of a JSON patch, to find its unknown and duplicate fields.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// strategicMergePatch applies a strategic merge patch to cur into out as kube-apiserver does: on
// maps, converted to out, with the unknown and duplicate fields it finds under Warn and
// Strict (the error under Strict names the patch, not the patched object).
func strategicMergePatch(cur runtime.Object, patch []byte, out runtime.Object, directive fieldValidation) ([]error, error) {
	checkStrict := directive == validationWarn || directive == validationStrict
	orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, err
	}
	patchMap := map[string]any{}
	var strictErrs []error
	if checkStrict {
		strictErrs, err = kjson.UnmarshalStrict(patch, &patchMap)
	} else {
		err = kjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	patched, err := strategicpatch.StrategicMergeMapPatch(orig, patchMap, out)
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return nil, apierrors.NewBadRequest(err.Error())
	case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
		return nil, unprocessable(err)
	case err != nil:
		return nil, responsewriters.UnknownError(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patched, out, checkStrict); err != nil {
		strict, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return nil, invalidPatch(fmt.Sprintf("%+v", patchMap), err)
		}
		strictErrs = append(strictErrs, strict.Errors()...)
	}
	if directive == validationStrict && len(strictErrs) > 0 {
		return nil, invalidPatch(fmt.Sprintf("%+v", patchMap), runtime.NewStrictDecodingError(strictErrs))
	}
	return strictErrs, nil
}

// invalidPatch is kube's 422 for a patched object that does not decode: the field "patch"
// holding value (the patched object, or the patch of a strategic merge).
func invalidPatch(value string, err error) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, err.Error())})
}

// unprocessable is kube's 422 for a patch that does not apply: the error's text, no
// kind, reason or details (NewGenericServerResponse).
func unprocessable(err error) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
}

// strictWarnings are the strict decoding errors as Warning headers, under Warn only.
func strictWarnings(errs []error, directive fieldValidation) []string {
	if directive != validationWarn {
		return nil
	}
	return strictDecodingWarnings(errs)
}

// rootWithoutValue fails a patch that tests or replaces the whole document without a
// value (or with null): json-patch v4 dereferences the missing value (kube-apiserver answers
// with a 500 from the recovered panic); the object is never null, so the operation fails.
func rootWithoutValue(p jsonpatch.Patch) error {
	for _, op := range p {
		if path, err := op.Path(); err == nil && path == "" && (op.Kind() == "test" || op.Kind() == "replace") && op["value"] == nil {
			return fmt.Errorf("%s operation of the whole document without a value: %w", op.Kind(), jsonpatch.ErrMissing)
		}
	}
	return nil
}
