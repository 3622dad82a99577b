// Package apiextensions holds the rules of apiextensions.k8s.io/v1
// CustomResourceDefinitions, run through the upstream apiextensions-apiserver strategy;
// serving the custom resources they define is pkg/control/apiextensions'.
package apiextensions

import (
	"context"
	"fmt"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdstrategy "k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// CustomResourceDefinitions are stored as apiextensions.k8s.io/v1 and checked by
// apiextensions-apiserver's own strategy (the one kube-apiserver runs), on its internal
// version: the validation of names, versions, schemas (structural, CEL cost) and conversion
// is upstream's, message for message.

// crdScheme holds apiextensions' internal and v1 versions with their conversions and
// defaulters; client-go's scheme, which the REST layer decodes with, learns v1.
var crdScheme = runtime.NewScheme()

func init() {
	apiextensionsinstall.Install(crdScheme)
	if err := apiextensionsv1.AddToScheme(scheme.Scheme); err != nil {
		panic(fmt.Sprintf("adding apiextensions.k8s.io/v1 to the scheme: %v", err))
	}
}

var crdStrategy = crdstrategy.NewStrategy(crdScheme)

// CustomResourceCleanupFinalizer holds a deleted CustomResourceDefinition until its custom
// resources are deleted. It is added when the deletion starts, as Kubernetes does (not on
// create: a new CRD shows no finalizer).
const CustomResourceCleanupFinalizer = apiextensionsv1.CustomResourceCleanupFinalizer

// internalCRD converts a v1 CustomResourceDefinition to apiextensions' internal version.
func internalCRD(obj runtime.Object) *apiextensions.CustomResourceDefinition {
	out := &apiextensions.CustomResourceDefinition{}
	registry.MustConvert(crdScheme, obj, out)
	return out
}

// fromInternalCRD writes an internal CustomResourceDefinition back into the v1 obj.
func fromInternalCRD(in *apiextensions.CustomResourceDefinition, obj runtime.Object) {
	registry.MustConvert(crdScheme, in, obj)
}

var CustomResourceDefinitionRules = registry.Rules{
	Default: func(obj runtime.Object) { crdScheme.Default(obj) },
	PrepareCreate: func(obj runtime.Object) {
		crd := internalCRD(obj)
		crdStrategy.PrepareForCreate(context.Background(), crd)
		fromInternalCRD(crd, obj)
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		crd := internalCRD(obj)
		crdStrategy.PrepareForUpdate(context.Background(), crd, internalCRD(old))
		fromInternalCRD(crd, obj)
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return crdStrategy.Validate(context.Background(), internalCRD(obj))
	},
	ValidateUpdate: registry.InternalUpdateValidation(internalCRD, crdStrategy.ValidateUpdate),
	Warnings: func(obj, old runtime.Object) []string {
		if old == nil {
			return crdStrategy.WarningsOnCreate(context.Background(), internalCRD(obj))
		}
		return crdStrategy.WarningsOnUpdate(context.Background(), internalCRD(obj), internalCRD(old))
	},
	SubresourceUpdates: map[string]registry.SubresourceRules{
		"status": {Validate: registry.InternalUpdateValidation(internalCRD, crdstrategy.NewStatusStrategy(crdScheme).ValidateUpdate)},
	},
	// Generation is counted by the strategy's PrepareForCreate and PrepareForUpdate.
	Table: registry.CreatedAtTable,
	// The first deletion adds the cleanup finalizer and the Terminating condition in the
	// write that marks the CRD, as apiextensions-apiserver's REST.Delete; the finalizer
	// controller then deletes its custom resources.
	MarkDeleted: func(obj runtime.Object) {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !slices.Contains(crd.Finalizers, CustomResourceCleanupFinalizer) {
			crd.Finalizers = append(crd.Finalizers, CustomResourceCleanupFinalizer)
		}
		apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
			Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
		})
	},
}
