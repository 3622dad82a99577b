// Package apiregistration holds the rules of apiregistration.k8s.io/v1 APIServices, run
// through the upstream kube-aggregator strategy, and the Available condition miniapi can
// vouch for: it does not proxy to the extension API servers an APIService names.
package apiregistration

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiservicestrategy "k8s.io/kube-aggregator/pkg/registry/apiservice"
)

// APIServices (apiregistration.k8s.io/v1) are stored as v1 and checked by kube-aggregator's
// own strategy on its internal version, as kube-apiserver checks them. miniapi has no
// aggregator: it serves every group itself, and the API server's autoregistration lists
// each as a local APIService (spec.service unset), which is always available. An APIService
// naming a Service is stored, but no request is proxied to it: it is marked unavailable.

// apiServiceScheme holds apiregistration's internal and external versions with their
// conversions and defaulters; client-go's scheme, which the REST layer decodes with, learns v1.
var apiServiceScheme = runtime.NewScheme()

func init() {
	apiregistrationinstall.Install(apiServiceScheme)
	if err := apiregistrationv1.AddToScheme(scheme.Scheme); err != nil {
		panic(fmt.Sprintf("adding apiregistration.k8s.io/v1 to the scheme: %v", err))
	}
}

var (
	apiServiceStrategy       = apiservicestrategy.NewStrategy(apiServiceScheme)
	apiServiceStatusStrategy = apiservicestrategy.NewStatusStrategy(apiServiceScheme)
)

// NotProxiedReason is the reason of the Available=False condition of an APIService that
// names a Service: miniapi does not proxy to extension API servers.
const NotProxiedReason = "ProxyNotSupported"

// internalAPIService converts a v1 APIService to apiregistration's internal version.
func internalAPIService(obj runtime.Object) *apiregistration.APIService {
	out := &apiregistration.APIService{}
	registry.MustConvert(apiServiceScheme, obj, out)
	return out
}

// fromInternalAPIService writes an internal APIService back into the v1 obj.
func fromInternalAPIService(in *apiregistration.APIService, obj runtime.Object) {
	registry.MustConvert(apiServiceScheme, in, obj)
}

// NotProxiedMessage is the message of the Available=False condition of an APIService of
// group and version that names a Service.
func NotProxiedMessage(group, version string) string {
	return fmt.Sprintf("minik8s does not proxy API requests to extension API servers: %s/%s is not served through this API server", group, version)
}

// markAvailability sets the Available condition miniapi can vouch for: true for a local
// APIService (the strategy sets it on create), false for one served by a Service. The
// availability controller (pkg/control/apiservices) then tells why where kube-aggregator's
// would (ServiceNotFound, MissingEndpoints, ...); an update keeps what it wrote.
func markAvailability(svc *apiregistration.APIService) {
	if svc.Spec.Service == nil {
		apiregistration.SetAPIServiceCondition(svc, apiregistration.NewLocalAvailableAPIServiceCondition())
		return
	}
	if c := apiregistration.GetAPIServiceConditionByType(svc, apiregistration.Available); c != nil && c.Reason != "Local" {
		return
	}
	apiregistration.SetAPIServiceCondition(svc, apiregistration.APIServiceCondition{
		Type: apiregistration.Available, Status: apiregistration.ConditionFalse, LastTransitionTime: metav1.Now(),
		Reason: NotProxiedReason, Message: NotProxiedMessage(svc.Spec.Group, svc.Spec.Version),
	})
}

var APIServiceRules = registry.Rules{
	// kube-aggregator's status strategy keeps labels, annotations, finalizers and owners.
	StatusMetadata: metav1.ResetObjectMetaForStatus,
	Default:        func(obj runtime.Object) { apiServiceScheme.Default(obj) },
	PrepareCreate: func(obj runtime.Object) {
		svc := internalAPIService(obj)
		apiServiceStrategy.PrepareForCreate(context.Background(), svc)
		markAvailability(svc)
		fromInternalAPIService(svc, obj)
	},
	PrepareUpdate: func(obj, old runtime.Object) {
		svc := internalAPIService(obj)
		apiServiceStrategy.PrepareForUpdate(context.Background(), svc, internalAPIService(old))
		markAvailability(svc) // spec.service may have changed
		fromInternalAPIService(svc, obj)
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return apiServiceStrategy.Validate(context.Background(), internalAPIService(obj))
	},
	ValidateUpdate: registry.InternalUpdateValidation(internalAPIService, apiServiceStrategy.ValidateUpdate),
	SubresourceUpdates: map[string]registry.SubresourceRules{
		"status": {Validate: registry.InternalUpdateValidation(internalAPIService, apiServiceStatusStrategy.ValidateUpdate)},
	},
	Table: &registry.TableDef{
		// kube-aggregator's columns.
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Service", "string", "The reference to the service that hosts this API endpoint.", false),
			registry.Column("Available", "string", "Whether this service is available.", false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			svc := obj.(*apiregistrationv1.APIService)
			service := "Local"
			if svc.Spec.Service != nil {
				service = svc.Spec.Service.Namespace + "/" + svc.Spec.Service.Name
			}
			available := "Unknown"
			for _, c := range svc.Status.Conditions {
				if c.Type != apiregistrationv1.Available {
					continue
				}
				available = string(c.Status)
				if c.Status != apiregistrationv1.ConditionTrue && c.Reason != "" {
					available += " (" + c.Reason + ")"
				}
			}
			return []any{svc.Name, service, available, registry.Age(svc.CreationTimestamp)}
		},
	},
}
