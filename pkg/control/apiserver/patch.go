package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	patchType := types.PatchType(mediaType)
	switch patchType {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	case types.ApplyYAMLPatchType:
		return s.serveApply(w, r, res, info)
	default:
		return unsupportedMediaType(mediaType)
	}
	directive, err := parseFieldValidation(r)
	if err != nil {
		return err
	}
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	patch, err := readRaw(r)
	if err != nil {
		return err
	}
	auditRequestPatch(r.Context(), patch)
	var warnings []string
	opts := generic.UpdateOptions{Subresource: info.Subresource, DryRun: dry}
	obj, err := s.objects.Update(r.Context(), res, info.Namespace, info.Name, opts, func(cur runtime.Object) (runtime.Object, error) {
		patched, err := applyPatch(res, patchType, cur, patch)
		if err != nil {
			return nil, err
		}
		out, err := res.New()
		if err != nil {
			return nil, err
		}
		if warnings, err = decodeInto(patched, out, directive); err != nil {
			return nil, err
		}
		undeclared, err := undeclaredFields(res, out, directive)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, undeclared...)
		return out, checkNames(res, out, info)
	})
	if err != nil {
		return err
	}
	setWarnings(w, res, info.Subresource, obj, warnings)
	return s.respond(w, r, res, http.StatusOK, obj)
}

// maxJSONPatchOperations is the most operations a JSON patch may have, as in kube-apiserver.
const maxJSONPatchOperations = 10000

// applyPatch applies a JSON, merge or strategic-merge patch to the object's JSON. A JSON
// patch may have at most maxJSONPatchOperations operations and its copies may add at most
// MaxBodyBytes to the object, so a small patch cannot amplify itself into gigabytes.
func applyPatch(res *registry.Resource, pt types.PatchType, cur runtime.Object, patch []byte) ([]byte, error) {
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			break
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		if err = testsOfRootWithoutValue(p); err != nil {
			break
		}
		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = MaxBodyBytes
		out, err = p.ApplyWithOptions(orig, opts)
		if tooLarge := (*jsonpatch.AccumulatedCopySizeError)(nil); errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(tooLarge.Error())
		}
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(orig, patch)
	case types.StrategicMergePatchType:
		var schema runtime.Object
		if schema, err = res.New(); err == nil {
			out, err = strategicpatch.StrategicMergePatch(orig, patch, schema)
		}
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the %s patch could not be applied: %v", pt, err))
	}
	return out, nil
}

// testsOfRootWithoutValue fails a patch that tests the whole document against a missing or
// null value: the object is never null, so the test fails, and json-patch itself would
// panic on it (found by FuzzPatch).
func testsOfRootWithoutValue(p jsonpatch.Patch) error {
	for _, op := range p {
		if path, err := op.Path(); err == nil && op.Kind() == "test" && path == "" && op["value"] == nil {
			return fmt.Errorf("testing value %s failed: %w", path, jsonpatch.ErrTestFailed)
		}
	}
	return nil
}
