// Package openapi describes the served API in OpenAPI v2 and v3 (what kubectl explain and
// kubectl's validation read), serves those documents with the custom resources' (Handler:
// /openapi/v2 and /openapi/v3), and gives server-side apply its type converter. The
// documents and the converter come from the definitions openapi-gen generates out of
// k8s.io/api and apimachinery (zz_generated.openapi.go; regenerate with
// hack/update-openapi.sh), never from hand-written schemas.
package openapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/kubernetes/scheme"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Documents are the OpenAPI documents describing a registry's resources.
type Documents struct {
	V2 *spec.Swagger
	// V3 holds one document per group version, by its path under /openapi/v3: "api/v1",
	// "apis/apps/v1".
	V3 map[string]*spec3.OpenAPI
	// Undescribed are the resources left out because their kind has no generated
	// definition: its package is missing from hack/update-openapi.sh.
	Undescribed []schema.GroupVersionResource
}

// Build describes every resource of reg whose kind has a generated definition (the others
// are listed in Undescribed); version is the Kubernetes version the documents' info carries.
func Build(reg *registry.Registry, version string) (*Documents, error) {
	docs := &Documents{V3: map[string]*spec3.OpenAPI{}}
	defined := definitions(func(string) spec.Ref { return spec.Ref{} })
	services, err := webServices(reg, func(res *registry.Resource) bool {
		if obj, err := res.New(); err == nil {
			if _, ok := defined[util.GetCanonicalTypeName(obj)]; ok {
				return true
			}
		}
		docs.Undescribed = append(docs.Undescribed, res.GroupVersionResource)
		return false
	})
	if err != nil {
		return nil, err
	}
	served := map[schema.GroupVersion]bool{}
	for _, gv := range reg.GroupVersions() {
		served[gv] = true
	}
	namer := newDefinitionNamer(scheme.Scheme, func(gv schema.GroupVersion) bool { return served[gv] })
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}}
	unauthorized := "Unauthorized"

	containers := make([]common.RouteContainer, len(services))
	for i, ws := range services {
		containers[i] = ws
	}
	docs.V2, err = builder.BuildOpenAPISpecFromRoutes(containers, &common.Config{
		Info:                           info,
		GetDefinitions:                 definitions,
		GetDefinitionName:              namer.name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: unauthorized}}},
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 document: %w", err)
	}
	for _, ws := range services {
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{ws}, &common.OpenAPIV3Config{
			Info:                           info,
			GetDefinitions:                 definitions,
			GetDefinitionName:              namer.name,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: unauthorized}}},
		})
		if err != nil {
			return nil, fmt.Errorf("building the OpenAPI v3 document of %s: %w", ws.gv, err)
		}
		docs.V3[V3Path(ws.gv)] = doc
	}
	return docs, nil
}

// V3Path is where the v3 document of a group version is served under /openapi/v3:
// "api/v1", "apis/apps/v1".
func V3Path(gv schema.GroupVersion) string { return strings.TrimPrefix(rootPath(gv), "/") }

// definitions are the generated definitions of k8s.io/api and apimachinery (ours) and of
// apiextensions.k8s.io and apiregistration.k8s.io (generated in apiextensions-apiserver
// and kube-aggregator).
func definitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := GetOpenAPIDefinitions(ref)
	for _, more := range []map[string]common.OpenAPIDefinition{apiextensionsopenapi.GetOpenAPIDefinitions(ref), aggregatoropenapi.GetOpenAPIDefinitions(ref)} {
		for name, def := range more {
			if _, ok := defs[name]; !ok {
				defs[name] = def
			}
		}
	}
	return defs
}

// TypeConverter converts the objects of every kind with a generated definition to and from
// structured-merge-diff values, what managed fields and server-side apply work on. It is
// built once per process: it depends on nothing but the generated definitions.
func TypeConverter() (managedfields.TypeConverter, error) { return typeConverter() }

var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	namer := newDefinitionNamer(scheme.Scheme, func(schema.GroupVersion) bool { return true })
	names := slices.Collect(maps.Keys(definitions(func(string) spec.Ref { return spec.Ref{} })))
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitions:    definitions,
		GetDefinitionName: namer.name,
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("collecting the OpenAPI definitions: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building the server-side apply type converter: %w", err)
	}
	return tc, nil
})
