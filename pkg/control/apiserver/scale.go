package apiserver

import (
	"fmt"
	"mime"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// scaleKind is the autoscaling/v1 Scale that every scale subresource reads and writes, for
// the helpers that work on a resource's kind (patching, tables).
var scaleKind = &registry.Resource{
	GroupVersionResource: autoscalingv1.SchemeGroupVersion.WithResource("scales"),
	Kind:                 "Scale",
	Rules:                registry.Rules{Table: registry.ScaleTable},
}

// serveScale serves .../scale of a kind with replicas: GET reads its Scale, PUT and PATCH
// change spec.replicas (what `kubectl scale` and autoscalers do).
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	switch info.Verb {
	case "get":
		obj, _, err := s.current(r.Context(), res, info.Name, objectKey(res, info.Namespace, info.Name))
		if err != nil {
			writeError(w, err)
			return
		}
		s.respond(w, r, scaleKind, http.StatusOK, toScale(res, obj))
	case "update":
		scale, err := decodeScale(r, info)
		if err != nil {
			writeError(w, err)
			return
		}
		s.setScale(w, r, res, info, func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error) { return scale, nil })
	case "patch":
		mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		patchType := types.PatchType(mediaType)
		if err != nil || patchType != types.JSONPatchType && patchType != types.MergePatchType && patchType != types.StrategicMergePatchType {
			writeError(w, unsupportedMediaType(r.Header.Get("Content-Type")))
			return
		}
		patch, err := readRaw(r)
		if err != nil {
			writeError(w, err)
			return
		}
		s.setScale(w, r, res, info, func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			patched, err := applyPatch(scaleKind, patchType, cur, patch)
			if err != nil {
				return nil, err
			}
			var scale autoscalingv1.Scale
			if _, err := decodeInto(patched, &scale, validationIgnore); err != nil {
				return nil, err
			}
			return &scale, checkScaleNames(&scale, info)
		})
	default:
		writeError(w, apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb))
	}
}

// setScale sets spec.replicas to what change makes of the current Scale. A resourceVersion
// left in the Scale must be the object's current one.
func (s *Server) setScale(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, change func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error)) {
	dry, err := dryRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts := updateOptions{subresource: info.Subresource, dryRun: dry}
	obj, err := s.update(r.Context(), res, info.Namespace, info.Name, opts, func(cur runtime.Object) (runtime.Object, error) {
		scale, err := change(toScale(res, cur))
		if err != nil {
			return nil, err
		}
		if errs := validation.ValidateNonnegativeField(int64(scale.Spec.Replicas), field.NewPath("spec", "replicas")); len(errs) > 0 {
			return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), info.Name, errs)
		}
		res.Rules.Scale.SetReplicas(cur, scale.Spec.Replicas)
		mustMeta(cur).SetResourceVersion(scale.ResourceVersion)
		return cur, nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	s.respond(w, r, scaleKind, http.StatusOK, toScale(res, obj))
}

// toScale is the Scale of an object of a kind with a scale subresource.
func toScale(res *registry.Resource, obj runtime.Object) *autoscalingv1.Scale {
	spec, status, selector := res.Rules.Scale.Replicas(obj)
	m := mustMeta(obj)
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: autoscalingv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}
}

// decodeScale reads the Scale a PUT sends.
func decodeScale(r *http.Request, info requestInfo) (*autoscalingv1.Scale, error) {
	directive, err := parseFieldValidation(r)
	if err != nil {
		return nil, err
	}
	var scale autoscalingv1.Scale
	if _, err := decodeBody(r, &scale, autoscalingv1.SchemeGroupVersion.WithKind("Scale"), directive); err != nil {
		return nil, err
	}
	return &scale, checkScaleNames(&scale, info)
}

func checkScaleNames(scale *autoscalingv1.Scale, info requestInfo) error {
	if scale.Name != "" && scale.Name != info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, info.Name))
	}
	if scale.Namespace != "" && scale.Namespace != info.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
