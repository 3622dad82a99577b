package apiserver

import (
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// selectors are a request's labelSelector and fieldSelector.
type selectors struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(r *http.Request, res *registry.Resource) (selectors, error) {
	q := r.URL.Query()
	// The parsers' errors are kube-apiserver's answers as they are.
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(err.Error())
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return selectors{}, apierrors.NewBadRequest(err.Error())
	}
	for _, req := range fs.Requirements() {
		if err := checkFieldLabel(res, req.Field); err != nil {
			return selectors{}, apierrors.NewBadRequest(err.Error())
		}
	}
	return selectors{labels: ls, fields: fs}, nil
}

// checkFieldLabel refuses a field label as kube-apiserver's ConvertFieldLabel does: a kind
// with selectable fields of its own has a conversion of its own, which knows them, the name
// and, if namespaced, the namespace; any other kind has apimachinery's default conversion.
func checkFieldLabel(res *registry.Resource, label string) error {
	if res.Rules.Fields == nil {
		_, _, err := runtime.DefaultMetaV1FieldSelectorConversion(label, "")
		return err
	}
	if _, ok := fieldSet(res, nil)[label]; !ok || (label == "metadata.namespace" && !res.Namespaced) {
		return fmt.Errorf("field label not supported: %s", label)
	}
	return nil
}

// empty tells whether the selectors select everything.
func (s selectors) empty() bool { return s.labels.Empty() && s.fields.Empty() }

// matchesStored is matches for a stored object, which it decodes only when a selector needs it.
func (s selectors) matchesStored(res *registry.Resource, o *storedObject) (bool, error) {
	if s.empty() {
		return true, nil
	}
	obj, err := o.Object()
	if err != nil {
		return false, err
	}
	return s.matches(res, obj), nil
}

func (s selectors) matches(res *registry.Resource, obj runtime.Object) bool {
	if s.empty() {
		return true
	}
	m := mustMeta(obj)
	if !s.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return s.fields.Empty() || s.fields.Matches(fieldSet(res, obj))
}

// fieldSet is the selectable fields of obj; with a nil obj, the set of field names.
func fieldSet(res *registry.Resource, obj runtime.Object) fields.Set {
	set := fields.Set{"metadata.name": "", "metadata.namespace": ""}
	if obj == nil {
		if res.Rules.Fields != nil {
			probe, err := res.New()
			if err == nil {
				for k := range res.Rules.Fields(probe) {
					set[k] = ""
				}
			}
		}
		return set
	}
	m := mustMeta(obj)
	set["metadata.name"], set["metadata.namespace"] = m.GetName(), m.GetNamespace()
	if res.Rules.Fields != nil {
		for k, v := range res.Rules.Fields(obj) {
			set[k] = v
		}
	}
	return set
}

// andName narrows a field selector to one object name.
func andName(s selectors, name string) fields.Selector {
	return fields.AndSelectors(s.fields, fields.OneTermEqualSelector("metadata.name", name))
}
