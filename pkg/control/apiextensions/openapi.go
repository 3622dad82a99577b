package apiextensions

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	crdlisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// OpenAPI is told the OpenAPI documents of the custom resources, to serve beside those of
// the built-in resources; it must be safe for calls from one goroutine at a time.
type OpenAPI interface {
	// SetCustomResourcesV2 replaces the custom resources' part of /openapi/v2: one spec per
	// CustomResourceDefinition, every served version in it.
	SetCustomResourcesV2(specs []*spec.Swagger)
	// SetGroupVersionV3 replaces the /openapi/v3 document of a custom resources' group
	// version; nil takes it away.
	SetGroupVersionV3(gv schema.GroupVersion, doc *spec3.OpenAPI)
}

// openAPIController keeps the OpenAPI documents of every served version of the
// Established CustomResourceDefinitions, as apiextensions-apiserver's openapi and
// openapiv3 controllers do: each one built by upstream's builder when its CustomResourceDefinition's
// spec changes, the v2 specs merged with the built-in spec, the v3 ones merged per group version.
type openAPIController struct {
	crds  crdlisters.CustomResourceDefinitionLister
	out   OpenAPI
	queue workqueue.TypedRateLimitingInterface[string]
	log   *slog.Logger

	// The documents of each CustomResourceDefinition, written by the one worker.
	v2 map[string]*spec.Swagger
	// v3 holds each CustomResourceDefinition's documents by the group version they describe.
	v3 map[string]map[schema.GroupVersion]*spec3.OpenAPI
	// built is the uid and generation each CustomResourceDefinition's documents were built
	// from, what upstream's controllers key their documents on (the builder reads the spec
	// only): an update of its status alone (conditions, stored versions) rebuilds nothing.
	built map[string]string
	// regenerations count the documents built and taken away, as upstream's counters
	// of the same names do (but for syncs that rebuild nothing, which these do not count).
	regenerationsV2, regenerationsV3 *prometheus.CounterVec
}

// newOpenAPIController makes the controller; metrics, when not nil, is where its counters
// are registered.
func newOpenAPIController(crds crdinformers.CustomResourceDefinitionInformer, out OpenAPI, metrics prometheus.Registerer, log *slog.Logger) (*openAPIController, error) {
	c := &openAPIController{
		crds: crds.Lister(), out: out, log: log,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "crd_openapi"}),
		v2:    map[string]*spec.Swagger{},
		v3:    map[string]map[schema.GroupVersion]*spec3.OpenAPI{},
		built: map[string]string{},
		regenerationsV2: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiextensions_openapi_v2_regeneration_count",
			Help: "Counter of OpenAPI v2 spec regeneration count broken down by causing CRD name and reason."}, []string{"crd", "reason"}),
		regenerationsV3: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "apiextensions_openapi_v3_regeneration_count",
			Help: "Counter of OpenAPI v3 spec regeneration count broken down by group, version, causing CRD and reason."}, []string{"group", "version", "crd", "reason"}),
	}
	if metrics != nil {
		for _, counter := range []prometheus.Collector{c.regenerationsV2, c.regenerationsV3} {
			if err := metrics.Register(counter); err != nil {
				return nil, err
			}
		}
	}
	enqueue := func(obj any) {
		if name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(name)
		}
	}
	_, err := crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	})
	return c, err
}

// run publishes until ctx ends; one worker, so that the merges see one state.
func (c *openAPIController) run(ctx context.Context, synced cache.InformerSynced) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return
	}
	go func() {
		for c.next() {
		}
	}()
	<-ctx.Done()
}

func (c *openAPIController) next() bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(name); err != nil {
		c.log.Error("OpenAPI documents of custom resources not updated", "customresourcedefinition", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync rebuilds the documents of the CustomResourceDefinition named, unless they were
// built from its spec as it is, and publishes what changed.
func (c *openAPIController) sync(name string) error {
	crd, err := c.crds.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	var key string // none when it is to have no documents
	if err == nil && apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		key = fmt.Sprintf("%s,%d", crd.UID, crd.Generation)
	}
	was, published := c.built[name]
	if was == key {
		return nil
	}
	var v2 *spec.Swagger
	v3 := map[schema.GroupVersion]*spec3.OpenAPI{}
	if key != "" {
		if v2, v3, err = buildOpenAPI(crd); err != nil {
			return err
		}
	}
	// The group versions it described before or describes now.
	changed := map[schema.GroupVersion]bool{}
	for gv := range c.v3[name] {
		changed[gv] = true
	}
	for gv := range v3 {
		changed[gv] = true
	}
	if v2 == nil {
		delete(c.v2, name)
		delete(c.v3, name)
	} else {
		c.v2[name], c.v3[name] = v2, v3
	}
	c.out.SetCustomResourcesV2(slices.Collect(maps.Values(c.v2)))
	for gv := range changed {
		var docs []*spec3.OpenAPI
		for _, byGV := range c.v3 {
			if doc, ok := byGV[gv]; ok {
				docs = append(docs, doc)
			}
		}
		if len(docs) == 0 {
			c.out.SetGroupVersionV3(gv, nil)
			continue
		}
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			return fmt.Errorf("merging the OpenAPI v3 documents of %s: %w", gv, err)
		}
		c.out.SetGroupVersionV3(gv, merged)
	}
	reason := "update"
	switch {
	case key == "":
		reason = "remove"
	case !published:
		reason = "add"
	}
	if key == "" {
		delete(c.built, name)
	} else {
		c.built[name] = key
	}
	c.regenerationsV2.WithLabelValues(name, reason).Inc()
	for gv := range changed {
		c.regenerationsV3.WithLabelValues(gv.Group, gv.Version, name, reason).Inc()
	}
	return nil
}

// buildOpenAPI builds, with apiextensions-apiserver's builder and options, the v2 spec of
// every served version of crd (merged) and the v3 document of each.
func buildOpenAPI(crd *apiextensionsv1.CustomResourceDefinition) (*spec.Swagger, map[schema.GroupVersion]*spec3.OpenAPI, error) {
	v2 := &spec.Swagger{}
	v3 := map[schema.GroupVersion]*spec3.OpenAPI{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		s, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
		if err != nil {
			return nil, nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		// Defaults pruned, as in the built-in spec they merge with.
		s.Definitions = handler.PruneDefaults(s.Definitions)
		if v2, err = builder.MergeSpecs(v2, s); err != nil {
			return nil, nil, err
		}
		doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{IncludeSelectableFields: true})
		if err != nil {
			return nil, nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		v3[schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}] = doc
	}
	return v2, v3, nil
}

// typeConverter is what managed fields and server-side apply of crd's custom resources
// work on, built as apiextensions-apiserver builds it (buildOpenAPIModelsForApply): from
// the OpenAPI v3 models of every version of crd, served or not (managed fields may still
// name a version no longer served), which carry x-kubernetes-list-type, -map-keys,
// -preserve-unknown-fields and int-or-string from the structural schema. The models of
// ObjectMeta and ListMeta come with each document.
func typeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	docs := make([]*spec3.OpenAPI, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		docs = append(docs, doc)
	}
	merged, err := builder.MergeSpecsV3(docs...)
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, err
	}
	return objectTypes{tc}, nil
}

// objectTypes gives upstream's type converter, which reads unstructured custom resources,
// the Objects of this package.
type objectTypes struct{ managedfields.TypeConverter }

func (t objectTypes) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if o, ok := obj.(*Object); ok {
		obj = toUnstructured(o)
	}
	return t.TypeConverter.ObjectToTyped(obj, opts...)
}
