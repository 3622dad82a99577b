package apiserver

import (
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/apiserver/fieldmanager"
	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// scaleKind is the autoscaling/v1 Scale that every scale subresource reads and writes, for
// the helpers that work on a resource's kind (patching, tables).
var scaleKind = &registry.Resource{
	GroupVersionResource: autoscalingv1.SchemeGroupVersion.WithResource("scales"),
	Kind:                 "Scale",
	Rules:                registry.Rules{Table: registry.ScaleTable},
}

// serveScale serves .../scale of a kind with replicas: GET reads its Scale, PUT and PATCH
// (server-side apply too) change spec.replicas (what `kubectl scale` and autoscalers do).
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	ctx := r.Context()
	var change func(parent runtime.Object, cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error)
	var uid types.UID // a PUT's precondition
	switch info.Verb {
	case "get":
		scale, err := s.objects.GetScale(ctx, res, info.Namespace, info.Name)
		if err != nil {
			return err
		}
		return s.respond(w, r, scaleKind, http.StatusOK, scale)
	case "update":
		scale, err := decodeScale(w, r, info)
		if err != nil {
			return err
		}
		uid = scale.UID
		change = func(runtime.Object, *autoscalingv1.Scale) (*autoscalingv1.Scale, error) { return scale, nil }
	case "patch":
		patchType, opts, err := patchOptions(r, res)
		if err != nil {
			return err
		}
		if patchType == types.ApplyYAMLPatchType {
			patch, strict, refused, err := decodeApplyConfiguration(r, opts.FieldValidation)
			if err != nil {
				return err
			}
			addWarnings(w, strict)
			owner := &fieldmanager.Owner{Manager: opts.FieldManager, Apply: true}
			ctx = fieldmanager.WithOwner(ctx, owner)
			change = func(parent runtime.Object, cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
				scale, applied, err := s.fields.ApplyScale(res, parent, cur, patch.DeepCopy(), opts.FieldManager, opts.Force != nil && *opts.Force)
				if err == nil {
					err = refused
				}
				if err != nil {
					return nil, err
				}
				owner.Applied = applied
				return scale, checkScaleNames(scale, info)
			}
			break
		}
		patch, err := readRaw(r)
		if err != nil {
			return err
		}
		filters.AuditRequestPatch(ctx, patch)
		change = func(_ runtime.Object, cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			patched, _, err := applyPatch(scaleKind, patchType, cur, patch, validationIgnore)
			if err != nil {
				return nil, err
			}
			scale := patched.(*autoscalingv1.Scale)
			return scale, checkScaleNames(scale, info)
		}
	default:
		return apierrors.NewMethodNotSupported(res.GroupResource(), info.Verb)
	}
	options := "UpdateOptions"
	if info.Verb == "patch" {
		options = "PatchOptions"
	}
	dry, err := dryRun(r, options)
	if err != nil {
		return err
	}
	scale, _, err := s.objects.UpdateScale(ctx, res, info.Namespace, info.Name, generic.UpdateOptions{DryRun: dry, UID: uid}, change)
	if err != nil {
		return err
	}
	return s.respond(w, r, scaleKind, http.StatusOK, scale)
}

// decodeScale reads the Scale a PUT sends, warning of what its decoding found.
func decodeScale(w http.ResponseWriter, r *http.Request, info requestInfo) (*autoscalingv1.Scale, error) {
	directive := parseFieldValidation(r)
	var scale autoscalingv1.Scale
	warnings, err := decodeBody(r, &scale, autoscalingv1.SchemeGroupVersion.WithKind("Scale"), directive)
	if err != nil {
		return nil, err
	}
	addWarnings(w, warnings)
	return &scale, checkScaleNames(&scale, info)
}

func checkScaleNames(scale *autoscalingv1.Scale, info requestInfo) error {
	if err := checkName(scale.Name, info.Name); err != nil {
		return err
	}
	if scale.Namespace != "" && scale.Namespace != info.Namespace {
		return namespaceMismatch()
	}
	return nil
}
