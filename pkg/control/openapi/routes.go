package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/minik8s/minik8s/pkg/control/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
)

// The routes below describe the REST API the way Kubernetes' endpoint installer does (same
// paths, operation ids, x-kubernetes-action and query parameters), as kube-openapi's
// route interfaces, so its builders can turn them into the v2 and v3 documents.

// webService holds the routes of one group version under its root path (/api/v1,
// /apis/GROUP/VERSION).
type webService struct {
	gv     schema.GroupVersion
	root   string
	routes []common.Route
}

func (w *webService) RootPath() string                   { return w.root }
func (w *webService) PathParameters() []common.Parameter { return nil }
func (w *webService) Routes() []common.Route             { return w.routes }

type route struct {
	method, path, operation, doc string
	tags                         []string
	params                       []common.Parameter
	consumes, produces           []string
	extensions                   map[string]any
	body                         any // a sample of the request body's type, nil for none
	responses                    []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operation }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.doc }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]any                         { return r.extensions }
func (r *route) RequestPayloadSample() any                        { return r.body }
func (r *route) ResponsePayloadSample() any                       { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// operationIDAndTags is the builders' GetOperationIDAndTagsFromRoute.
func operationIDAndTags(r common.Route) (string, []string, error) {
	rt, ok := r.(*route)
	if !ok {
		return "", nil, fmt.Errorf("route %s %s is not one of ours", r.Method(), r.Path())
	}
	return rt.operation, rt.tags, nil
}

type parameter struct {
	name, doc string
	kind      common.ParameterKind
	dataType  string
	required  bool
}

func (p parameter) Name() string               { return p.name }
func (p parameter) Description() string        { return p.doc }
func (p parameter) Required() bool             { return p.required }
func (p parameter) Kind() common.ParameterKind { return p.kind }
func (p parameter) DataType() string           { return p.dataType }
func (p parameter) AllowMultiple() bool        { return false }

type response struct {
	code    int
	message string
	model   any
}

func (r response) Code() int       { return r.code }
func (r response) Message() string { return r.message }
func (r response) Model() any      { return r.model }

var (
	namespaceParam = parameter{name: "namespace", doc: "object name and auth scope, such as for teams and projects", kind: common.PathParameterKind, dataType: "string", required: true}

	listParams             = queryParams(metav1.ListOptions{})
	createParams           = queryParams(metav1.CreateOptions{})
	updateParams           = queryParams(metav1.UpdateOptions{})
	patchParams            = queryParams(metav1.PatchOptions{})
	deleteParams           = queryParams(metav1.DeleteOptions{})
	deleteCollectionParams = append(queryParams(metav1.ListOptions{}, "watch", "allowWatchBookmarks"), deleteParams...)

	patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
	jsonOnly   = []string{"application/json"}
	listTypes  = []string{"application/json", "application/json;stream=watch"}
)

// queryParams turns the fields of an options type into query parameters documented by the
// type's SwaggerDoc, as Kubernetes' endpoint installer does. Struct fields (TypeMeta,
// preconditions) travel only in bodies.
func queryParams(options interface{ SwaggerDoc() map[string]string }, exclude ...string) []common.Parameter {
	docs := options.SwaggerDoc()
	t := reflect.TypeOf(options)
	var out []common.Parameter
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || slices.Contains(exclude, name) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var dataType string
		switch {
		case ft.Kind() == reflect.Bool:
			dataType = "boolean"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			dataType = "integer"
		case ft.Kind() == reflect.String, ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			dataType = "string" // a repeatable string such as dryRun is still one string parameter
		default:
			continue
		}
		out = append(out, parameter{name: name, doc: docs[name], kind: common.QueryParameterKind, dataType: dataType})
	}
	return out
}

// webServices describes the resources of reg that describe accepts, one web service per
// group version.
func webServices(reg *registry.Registry, describe func(*registry.Resource) bool) ([]*webService, error) {
	var out []*webService
	for _, gv := range reg.GroupVersions() {
		ws := &webService{gv: gv, root: rootPath(gv)}
		ids := newOperationIDs(gv)
		ws.routes = append(ws.routes, &route{
			method: http.MethodGet, path: ws.root + "/", operation: "get" + ids.gv + "APIResources", tags: ids.tags,
			doc: "get available resources", produces: jsonOnly,
			responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", &metav1.APIResourceList{}}},
		})
		for _, res := range reg.Resources() {
			if res.GroupVersion() != gv || !describe(res) {
				continue
			}
			routes, err := resourceRoutes(ws.root, ids, res)
			if err != nil {
				return nil, err
			}
			ws.routes = append(ws.routes, routes...)
		}
		out = append(out, ws)
	}
	return out, nil
}

// rootPath is where a group version is served: /api/v1, /apis/GROUP/VERSION.
func rootPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// operationIDs builds Kubernetes' operation ids (listCoreV1NamespacedPod) and tags (core_v1).
type operationIDs struct {
	gv   string
	tags []string
}

func newOperationIDs(gv schema.GroupVersion) operationIDs {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	return operationIDs{
		gv:   validOperationID(group, true) + validOperationID(gv.Version, true),
		tags: []string{validOperationID(group, false) + "_" + validOperationID(gv.Version, false)},
	}
}

// validOperationID drops what is not a letter (or an inner digit), capitalising the letter
// that follows: rbac.authorization → rbacAuthorization.
func validOperationID(s string, capitalizeFirst bool) string {
	var b strings.Builder
	capitalize := capitalizeFirst
	for i, r := range s {
		if !unicode.IsLetter(r) && r != '_' && (i == 0 || !unicode.IsDigit(r)) {
			capitalize = true
			continue
		}
		if capitalize {
			r = unicode.ToUpper(r)
			capitalize = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resourceRoutes are the operations on one resource and its subresources.
func resourceRoutes(root string, ids operationIDs, res *registry.Resource) ([]common.Route, error) {
	obj, err := res.New()
	if err != nil {
		return nil, err
	}
	list, err := res.NewList()
	if err != nil {
		return nil, fmt.Errorf("resource %s has no list kind: %w", res.GroupVersionResource, err)
	}
	kind := res.Kind
	collection, scope := root+"/"+res.Resource, ""
	var scopeParams []common.Parameter
	if res.Namespaced {
		collection, scope = root+"/namespaces/{namespace}/"+res.Resource, "Namespaced"
		scopeParams = []common.Parameter{namespaceParam}
	}
	item := collection + "/{name}"
	itemParams := append(slices.Clone(scopeParams), parameter{name: "name", doc: "name of the " + kind, kind: common.PathParameterKind, dataType: "string", required: true})
	gvk := gvkExtension(res.GVK())
	op := func(method, verb, action, path, name, doc string, params []common.Parameter, body any, responses ...common.StatusCodeResponse) *route {
		r := &route{
			method: method, path: path, operation: verb + ids.gv + name, tags: ids.tags, doc: doc,
			params: params, consumes: []string{"*/*"}, produces: jsonOnly, body: body, responses: responses,
			extensions: map[string]any{"x-kubernetes-action": action, extensionGVK: gvk},
		}
		if body != nil {
			_, optional := body.(*metav1.DeleteOptions) // clients may leave DeleteOptions out
			r.params = append(slices.Clone(params), parameter{name: "body", kind: common.BodyParameterKind, required: !optional})
		}
		return r
	}
	ok := func(model any) common.StatusCodeResponse { return response{http.StatusOK, "OK", model} }
	created := func(model any) common.StatusCodeResponse { return response{http.StatusCreated, "Created", model} }
	accepted := func(model any) common.StatusCodeResponse { return response{http.StatusAccepted, "Accepted", model} }

	listOp := op(http.MethodGet, "list", "list", collection, scope+kind, "list or watch objects of kind "+kind, concat(scopeParams, listParams), nil, ok(list))
	listOp.produces = listTypes
	patch := op(http.MethodPatch, "patch", "patch", item, scope+kind, "partially update the specified "+kind, concat(itemParams, patchParams), &metav1.Patch{}, ok(obj), created(obj))
	patch.consumes = patchTypes
	routes := []common.Route{
		listOp,
		op(http.MethodPost, "create", "post", collection, scope+kind, "create a "+kind, concat(scopeParams, createParams), obj, ok(obj), created(obj), accepted(obj)),
		op(http.MethodDelete, "delete", "deletecollection", collection, "Collection"+scope+kind, "delete collection of "+kind, concat(scopeParams, deleteCollectionParams), &metav1.DeleteOptions{}, ok(&metav1.Status{})),
		op(http.MethodGet, "read", "get", item, scope+kind, "read the specified "+kind, itemParams, nil, ok(obj)),
		op(http.MethodPut, "replace", "put", item, scope+kind, "replace the specified "+kind, concat(itemParams, updateParams), obj, ok(obj), created(obj)),
		patch,
		op(http.MethodDelete, "delete", "delete", item, scope+kind, "delete a "+kind, concat(itemParams, deleteParams), &metav1.DeleteOptions{}, ok(obj), accepted(obj)),
	}
	if res.Namespaced {
		all := op(http.MethodGet, "list", "list", root+"/"+res.Resource, kind+"ForAllNamespaces", "list or watch objects of kind "+kind, listParams, nil, ok(list))
		all.produces = listTypes
		routes = append(routes, all)
	}
	for _, sub := range res.Subresources {
		path, name := item+"/"+sub, scope+kind+validOperationID(sub, true)
		switch sub {
		case "binding":
			b := &corev1.Binding{}
			r := op(http.MethodPost, "create", "post", path, name, "create binding of a "+kind, concat(itemParams, createParams), b, ok(b), created(b), accepted(b))
			r.extensions[extensionGVK] = gvkExtension(corev1.SchemeGroupVersion.WithKind("Binding"))
			routes = append(routes, r)
		case "finalize":
			routes = append(routes, op(http.MethodPut, "replace", "put", path, name, "replace finalize of the specified "+kind, concat(itemParams, updateParams), obj, ok(obj), created(obj)))
		default: // status, scale: read, replace and patch of the subresource's kind
			model, subGVK := obj, res.GVK()
			if sub == "scale" {
				model, subGVK = &autoscalingv1.Scale{}, autoscalingv1.SchemeGroupVersion.WithKind("Scale")
			}
			subRoutes := []*route{
				op(http.MethodGet, "read", "get", path, name, "read "+sub+" of the specified "+kind, itemParams, nil, ok(model)),
				op(http.MethodPut, "replace", "put", path, name, "replace "+sub+" of the specified "+kind, concat(itemParams, updateParams), model, ok(model), created(model)),
				op(http.MethodPatch, "patch", "patch", path, name, "partially update "+sub+" of the specified "+kind, concat(itemParams, patchParams), &metav1.Patch{}, ok(model), created(model)),
			}
			subRoutes[2].consumes = patchTypes
			for _, r := range subRoutes {
				r.extensions[extensionGVK] = gvkExtension(subGVK)
				routes = append(routes, r)
			}
		}
	}
	return routes, nil
}

func concat(a, b []common.Parameter) []common.Parameter { return append(slices.Clone(a), b...) }
