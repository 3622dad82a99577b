package apiextensions

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// noneConversion serves res, a version other than storage, with the `None` conversion
// strategy: the same fields under another apiVersion, pruned with the schema of the
// version converted to (schemas, by version), as upstream's schemaCoercingConverter prunes
// what its converter returns.
func noneConversion(res, storage *registry.Resource, schemas map[string]*structuralschema.Structural, preserveUnknownFields bool) *registry.Conversion {
	convert := func(obj runtime.Object, to schema.GroupVersion) (runtime.Object, error) {
		out := obj.DeepCopyObject().(*Object)
		out.APIVersion = to.String()
		if s := schemas[to.Version]; s != nil && !preserveUnknownFields {
			content := out.withoutMetadata()
			if err := coerce(content, s, false); err != nil {
				return nil, err
			}
			out.setWithoutMetadata(content)
		}
		return out, nil
	}
	return &registry.Conversion{Storage: storage,
		ToStorage: func(obj runtime.Object) (runtime.Object, error) { return convert(obj, storage.GroupVersion()) },
		FromStorage: func(obj runtime.Object) (runtime.Object, error) {
			if obj.(*Object).APIVersion == res.GroupVersion().String() {
				return obj, nil
			}
			return convert(obj, res.GroupVersion())
		}}
}

// useWebhook makes every served version of crd convert through its conversion webhook
// (strategy Webhook), with apiextensions-apiserver's converter: the ConversionReview
// (v1 or v1beta1, the first of conversionReviewVersions), the HTTPS call to the url or
// the Service of its clientConfig, the checks of the response (uid, as many objects as
// sent, apiVersion and kind, name, namespace and uid unchanged, metadata but labels and
// annotations restored) are upstream's. The storage version converts
// too: an object stored before the storage version changed is at another version.
func useWebhook(crd *apiextensionsv1.CustomResourceDefinition, converters *conversion.CRConverterFactory,
	storage *registry.Resource, served []*registry.Resource, schemas map[string]*structuralschema.Structural) error {
	if converters == nil {
		return errors.New("conversion webhooks cannot be called here")
	}
	// The unsafe converter may change what it is given: it is given a copy.
	_, converter, err := converters.NewConverter(crd)
	if err != nil {
		return fmt.Errorf("conversion webhook: %w", err)
	}
	c := webhookConverter{converter: converter, schemas: schemas, preserveUnknownFields: crd.Spec.PreserveUnknownFields}
	for _, res := range served {
		res.Conversion = &registry.Conversion{
			Storage: storage,
			ToStorage: func(obj runtime.Object) (runtime.Object, error) {
				return c.convert(obj, res.GroupVersion(), storage.GroupVersion())
			},
			FromStorage: func(obj runtime.Object) (runtime.Object, error) {
				from, err := schema.ParseGroupVersion(obj.(*Object).APIVersion)
				if err != nil {
					return nil, conversionFailed(err)
				}
				return c.convert(obj, from, res.GroupVersion())
			},
		}
	}
	return nil
}

type webhookConverter struct {
	converter             runtime.ObjectConvertor
	schemas               map[string]*structuralschema.Structural
	preserveUnknownFields bool
}

// convert converts obj from one version to another; an object already at the version is
// not sent to the webhook. As upstream's schemaCoercingConverter, what the webhook returns
// is pruned with the schema of the version it is converted to, its embedded resources'
// metadata checked.
func (c webhookConverter) convert(obj runtime.Object, from, to schema.GroupVersion) (runtime.Object, error) {
	if from == to {
		return obj, nil
	}
	u := toUnstructured(obj)
	u.SetAPIVersion(from.String())
	out, err := c.converter.ConvertToVersion(u, to)
	if err != nil {
		return nil, conversionFailed(err)
	}
	content := out.(runtime.Unstructured).UnstructuredContent()
	if s := c.schemas[to.Version]; s != nil && !c.preserveUnknownFields {
		if err := coerce(content, s, false); err != nil {
			return nil, conversionFailed(err)
		}
	}
	converted := &Object{}
	if err := converted.SetContent(content); err != nil {
		return nil, conversionFailed(err)
	}
	return converted, nil
}

// conversionFailed is the answer to a request whose object could not be converted, as
// kube-apiserver gives it: its storage layer passes the converter's error on, which the
// handler answers 500 with the error's words.
func conversionFailed(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Code: http.StatusInternalServerError, Message: err.Error()}}
}
