package apiextensions

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/finalizer"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/dynamic"
)

// dynamicInstances gives upstream's CRD finalizer (which deletes a deleted
// CustomResourceDefinition's custom resources, namespace by namespace, before its
// customresourcecleanup finalizer goes) the custom resources through the API, with the
// dynamic client, where kube-apiserver hands it its storage.
type dynamicInstances struct{ client dynamic.Interface }

func (d dynamicInstances) GetCustomResourceListerCollectionDeleter(crd *apiextensionsv1.CustomResourceDefinition) (finalizer.ListerCollectionDeleter, error) {
	for _, v := range crd.Spec.Versions {
		if v.Served {
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Status.AcceptedNames.Plural}
			return instances{rest.TableConvertor(nil), d.client.Resource(gvr), crd.Spec.Scope == apiextensionsv1.NamespaceScoped}, nil
		}
	}
	return nil, fmt.Errorf("customresourcedefinition %s serves no version", crd.Name)
}

// instances are the custom resources of one CustomResourceDefinition.
type instances struct {
	rest.TableConvertor // not used by the finalizer
	client              dynamic.NamespaceableResourceInterface
	namespaced          bool
}

func (i instances) NewList() runtime.Object { return &unstructured.UnstructuredList{} }

// List lists every custom resource, in all namespaces.
func (i instances) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	return i.client.List(ctx, metav1.ListOptions{})
}

// DeleteCollection deletes the custom resources of the request's namespace.
func (i instances) DeleteCollection(ctx context.Context, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	var err error
	if ns, _ := request.NamespaceFrom(ctx); i.namespaced {
		err = i.client.Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	} else {
		err = i.client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	return nil, err
}
