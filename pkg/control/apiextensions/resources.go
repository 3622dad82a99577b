package apiextensions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Resources are the registry resources serving a CustomResourceDefinition's custom
// resources, one per served version. Every rule is apiextensions-apiserver's: its custom
// resource strategy (metadata, schema and CEL validation, status and generation), its
// structural pruning and defaulting, its table convertor for the printer columns. The
// versions share one key space: a version other than the storage version is converted
// on every read and write (strategy None: only apiVersion changes; Webhook: by the
// CustomResourceDefinition's conversion webhook, through converters, which may be nil
// where no webhook can be called).
func Resources(crd *apiextensionsv1.CustomResourceDefinition, converters *conversion.CRConverterFactory) ([]*registry.Resource, error) {
	storageVersion, err := apiextensionshelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	schemas, err := structuralSchemas(crd)
	if err != nil {
		return nil, err
	}
	var storage *registry.Resource
	var out []*registry.Resource
	// One type converter knows every version, built at the first write.
	types := sync.OnceValues(func() (managedfields.TypeConverter, error) { return typeConverter(crd) })
	for _, v := range crd.Spec.Versions {
		if !v.Served && v.Name != storageVersion {
			continue
		}
		res, err := versionResource(crd, v, schemas[v.Name])
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		res.TypeConverter = types
		if v.Deprecated {
			res.Deprecation = deprecationWarning(crd.Spec, v)
		}
		if v.Name == storageVersion {
			storage = res
		}
		if v.Served {
			out = append(out, res)
		}
	}
	if len(schemas) > 0 && !crd.Spec.PreserveUnknownFields {
		storage.Rules.Decoded = fromStorage(crd, schemas)
	}
	if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
		if err := useWebhook(crd, converters, storage, out, schemas); err != nil {
			return nil, err
		}
		return out, nil
	}
	for _, res := range out {
		if res != storage {
			res.Conversion = noneConversion(res, storage, schemas, crd.Spec.PreserveUnknownFields)
		}
	}
	return out, nil
}

// deprecationWarning is what a request to the deprecated version v gets: its own
// deprecationWarning, else apiextensions-apiserver's default (unexported there), which
// names the newest served version that is newer and not deprecated.
func deprecationWarning(crd apiextensionsv1.CustomResourceDefinitionSpec, v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if v.DeprecationWarning != nil {
		return *v.DeprecationWarning
	}
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Group, v.Name, crd.Names.Kind)
	newest := ""
	for _, other := range crd.Versions {
		if other.Served && !other.Deprecated && version.CompareKubeAwareVersionStrings(v.Name, other.Name) < 0 &&
			(newest == "" || version.CompareKubeAwareVersionStrings(newest, other.Name) < 0) {
			newest = other.Name
		}
	}
	if newest == "" {
		return msg
	}
	return fmt.Sprintf("%s; use %s/%s %s", msg, crd.Group, newest, crd.Names.Kind)
}

// structuralSchemas are the structural schemas of crd's versions that have one, with
// defaults that pruning would drop taken out (as apiextensions-apiserver's CRD handler
// prepares them).
func structuralSchemas(crd *apiextensionsv1.CustomResourceDefinition) (map[string]*structuralschema.Structural, error) {
	out := map[string]*structuralschema.Structural{}
	for _, v := range crd.Spec.Versions {
		internal, err := internalValidation(crd, v.Name)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		if internal.OpenAPIV3Schema == nil {
			continue
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s: the schema is not structural: %w", v.Name, err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		out[v.Name] = s
	}
	return out, nil
}

// internalValidation is the schema of a version of crd, in the internal form upstream's
// validators take.
func internalValidation(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensions.CustomResourceValidation, error) {
	validation, err := apiextensionshelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, err
	}
	internal := &apiextensions.CustomResourceValidation{}
	if validation != nil {
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(validation, internal, nil); err != nil {
			return nil, err
		}
	}
	return internal, nil
}

// fromStorage brings a custom resource read from storage up to the current schema of the
// version it is stored at, as apiextensions-apiserver's storage codec does as it decodes
// (schemaCoercingDecoder, then unstructuredDefaulter): what the schema no longer declares
// is pruned, the defaults it has gained since are filled in. An object of a version or
// kind the CustomResourceDefinition no longer has is left as it is, as upstream leaves it.
func fromStorage(crd *apiextensionsv1.CustomResourceDefinition, schemas map[string]*structuralschema.Structural) func(runtime.Object) error {
	return func(obj runtime.Object) error {
		o := obj.(*Object)
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return err
		}
		s := schemas[gv.Version]
		if gv.Group != crd.Spec.Group || o.Kind != crd.Status.AcceptedNames.Kind || s == nil {
			return nil
		}
		// The typed metadata needs no pruning and the schema may default none of it: the
		// rest is worked on in place, with no encoding.
		content := o.withoutMetadata()
		if err := coerce(content, s, true); err != nil {
			return err
		}
		structuraldefaulting.Default(content, s)
		o.setWithoutMetadata(content)
		return nil
	}
}

// coerce prunes the fields content's schema does not declare and the nulls it does not
// allow, and checks the metadata of embedded resources, as apiextensions-apiserver's
// unstructuredSchemaCoercer does for every custom resource it decodes; dropInvalidMetadata
// drops, instead of refusing, what does not fit the metadata (upstream drops it from what
// it reads from storage).
func coerce(content map[string]any, s *structuralschema.Structural, dropInvalidMetadata bool) error {
	structuralpruning.Prune(content, s, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(content, s)
	if err := structuralobjectmeta.Coerce(nil, content, s, true, dropInvalidMetadata); err != nil {
		return err
	}
	return nil
}

// versionResource builds the resource of one version from upstream's custom resource
// strategy, as apiextensions-apiserver's CRD handler builds its storage; structural is the
// version's schema (structuralSchemas), nil if it has none.
func versionResource(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, structural *structuralschema.Structural) (*registry.Resource, error) {
	names := crd.Status.AcceptedNames
	gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
	kind, listKind := gv.WithKind(names.Kind), gv.WithKind(names.ListKind)
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped

	internal, err := internalValidation(crd, v.Name)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	subresources, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	var status *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var scale *apiextensions.CustomResourceSubresourceScale
	var subs []string
	if subresources != nil && subresources.Status != nil {
		status = &apiextensions.CustomResourceSubresourceStatus{}
		subs = append(subs, "status")
		if s := internal.OpenAPIV3Schema; s != nil {
			if statusSchema, ok := s.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return nil, err
				}
			}
		}
	}
	if subresources != nil && subresources.Scale != nil {
		scale = &apiextensions.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scale, nil); err != nil {
			return nil, err
		}
		subs = append(subs, "scale")
	}
	strategy := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), namespaced, kind,
		validator, statusValidator, structural, status, scale, v.SelectableFields)
	statusStrategy := customresource.NewStatusStrategy(strategy)
	table, err := tableconvertor.New(defaultColumns(v.AdditionalPrinterColumns))
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	rules := registry.Rules{
		// Pruning and defaulting, which upstream does as it decodes a request (and as it
		// reads from storage: fromStorage). As there, without the typed metadata, which
		// needs no pruning and which the schema may default none of: its conversion to
		// unstructured values and back, and upstream's of the root metadata in coerce, made
		// up most of what defaulting cost, twice per create.
		Default: func(obj runtime.Object) {
			if structural == nil || crd.Spec.PreserveUnknownFields {
				return
			}
			o := obj.(*Object)
			content := o.withoutMetadata()
			_ = coerce(content, structural, false)
			structuraldefaulting.Default(content, structural)
			o.setWithoutMetadata(content)
		},
		PrepareCreate: func(obj runtime.Object) {
			mutate(obj, func(u *unstructured.Unstructured) { strategy.PrepareForCreate(ctx, u) })
		},
		PrepareUpdate: func(obj, old runtime.Object) {
			o := toUnstructured(old)
			mutate(obj, func(u *unstructured.Unstructured) { strategy.PrepareForUpdate(ctx, u, o) })
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return strategy.Validate(ctx, toUnstructured(obj))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			u, was := toUnstructured(obj), toUnstructured(old)
			// The generic store checks the metadata update itself, knowing a deletion may
			// set deletionTimestamp; the strategy would refuse it.
			was.SetDeletionTimestamp(u.GetDeletionTimestamp())
			was.SetDeletionGracePeriodSeconds(u.GetDeletionGracePeriodSeconds())
			return strategy.ValidateUpdate(ctx, u, was)
		},
		// An update warns only of the finalizers it adds.
		Warnings: func(obj, old runtime.Object) []string {
			if old == nil {
				return strategy.WarningsOnCreate(ctx, withoutManagedFields(obj))
			}
			return strategy.WarningsOnUpdate(ctx, withoutManagedFields(obj), withoutManagedFields(old))
		},
		// The fields nothing declares, as upstream's decoder of custom resources reports
		// them: the metadata's, those pruning would drop, an embedded resource's metadata's;
		// an embedded resource that does not decode fails there.
		UnknownFields: func(obj runtime.Object) ([]string, error) {
			unknown := slices.Clone(obj.(*Object).unknownMetadata)
			if structural == nil {
				return unknown, nil
			}
			content := withoutManagedFields(obj).UnstructuredContent()
			var paths []string
			if !crd.Spec.PreserveUnknownFields {
				paths = structuralpruning.PruneWithOptions(content, structural, true,
					structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
			}
			fieldErr, embedded := structuralobjectmeta.CoerceWithOptions(nil, content, structural, false,
				structuralobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
			if fieldErr != nil {
				return nil, apierrors.NewBadRequest(fieldErr.Error())
			}
			for _, p := range append(paths, embedded...) {
				unknown = append(unknown, fmt.Sprintf("unknown field %q", p))
			}
			return unknown, nil
		},
		Fields: func(obj runtime.Object) fields.Set {
			_, set, err := strategy.GetAttrs(withoutManagedFields(obj))
			if err != nil {
				return nil
			}
			return set
		},
		Table: tableDef(table),
		SubresourceUpdates: map[string]registry.SubresourceRules{
			"status": {
				Prepare: func(obj, old runtime.Object) {
					o := toUnstructured(old)
					mutate(obj, func(u *unstructured.Unstructured) { statusStrategy.PrepareForUpdate(ctx, u, o) })
				},
				Validate: func(obj, old runtime.Object) field.ErrorList {
					return statusStrategy.ValidateUpdate(ctx, toUnstructured(obj), toUnstructured(old))
				},
			},
		},
	}
	if scale != nil {
		if rules.Scale, err = scaleDef(crd, scale); err != nil {
			return nil, err
		}
	}
	return &registry.Resource{
		GroupVersionResource: gv.WithResource(names.Plural),
		Kind:                 names.Kind,
		Singular:             names.Singular,
		Namespaced:           namespaced,
		ShortNames:           names.ShortNames,
		Categories:           names.Categories,
		Subresources:         subs,
		Rules:                rules,
		Terminating:          !crd.DeletionTimestamp.IsZero() || apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating),
		NewObject: func() runtime.Object {
			return &Object{TypeMeta: metav1.TypeMeta{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind}}
		},
		NewListObject: func() runtime.Object {
			return &List{TypeMeta: metav1.TypeMeta{APIVersion: listKind.GroupVersion().String(), Kind: listKind.Kind}}
		},
	}, nil
}

// defaultColumns are the printer columns of a version, Age when it names none (as
// kube-apiserver serves them).
func defaultColumns(columns []apiextensionsv1.CustomResourceColumnDefinition) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(columns) > 0 {
		return columns
	}
	return []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"], JSONPath: ".metadata.creationTimestamp"}}
}

// tableDef renders rows with upstream's table convertor.
func tableDef(table rest.TableConvertor) *registry.TableDef {
	head, _ := table.ConvertToTable(context.Background(), &unstructured.UnstructuredList{}, nil)
	def := &registry.TableDef{Row: func(obj runtime.Object) []any {
		t, err := table.ConvertToTable(context.Background(), toUnstructured(obj), nil)
		if err != nil || len(t.Rows) == 0 {
			return nil
		}
		return t.Rows[0].Cells
	}}
	if head != nil {
		def.Columns = head.ColumnDefinitions
	}
	return def
}

// scaleDef reads and writes replicas at the paths the CRD's scale subresource names.
func scaleDef(crd *apiextensionsv1.CustomResourceDefinition, scale *apiextensions.CustomResourceSubresourceScale) (*registry.ScaleDef, error) {
	path := func(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }
	// The replicas path of every version, as upstream's handler maps them for the managed
	// fields of scale writes: entries made through any version keep their meaning.
	paths := managedfields.ResourcePathMappings{}
	for _, v := range crd.Spec.Versions {
		subresources, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		paths[gv] = nil
		if subresources != nil && subresources.Scale != nil {
			replicas := fieldpath.Path{}
			for _, name := range path(subresources.Scale.SpecReplicasPath) {
				replicas = append(replicas, fieldpath.PathElement{FieldName: &name})
			}
			paths[gv] = replicas
		}
	}
	return &registry.ScaleDef{
		ReplicasPaths: paths,
		Replicas: func(obj runtime.Object) (spec, status int32, selector string) {
			c := toUnstructured(obj).UnstructuredContent()
			sp, _, _ := unstructured.NestedInt64(c, path(scale.SpecReplicasPath)...)
			st, _, _ := unstructured.NestedInt64(c, path(scale.StatusReplicasPath)...)
			if scale.LabelSelectorPath != nil {
				selector, _, _ = unstructured.NestedString(c, path(*scale.LabelSelectorPath)...)
			}
			return int32(sp), int32(st), selector
		},
		SetReplicas: func(obj runtime.Object, replicas int32) {
			mutate(obj, func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, int64(replicas), path(scale.SpecReplicasPath)...)
			})
		},
	}, nil
}

// toUnstructured is the custom resource as upstream's strategy takes it.
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	return contentOf(obj, true)
}

// withoutManagedFields is toUnstructured for the readers that do not look at
// metadata.managedFields (selectable fields, warnings, pruning): their conversion to
// unstructured values (a JSON decoding of each entry's fields) was most of what the
// metadata cost. obj itself is left as it is: readers share stored objects.
func withoutManagedFields(obj runtime.Object) *unstructured.Unstructured {
	return contentOf(obj, false)
}

func contentOf(obj runtime.Object, managed bool) *unstructured.Unstructured {
	c, err := obj.(*Object).content(managed)
	if err != nil {
		panic(fmt.Sprintf("a custom resource does not encode: %v", err)) // it was decoded from JSON
	}
	return &unstructured.Unstructured{Object: c}
}

// mutate lets f change obj as unstructured content. The managed fields are kept out of
// it: no strategy changes them, and each round trip through unstructured values decoded
// and encoded every entry's fields again (upstream's metadata coercion does it twice
// more), several times per write. f may still drop or set them (the status strategy puts
// back the ones it was given); left alone, they come back as that round trip would have
// made them (canonicalManagedFields), converted once.
func mutate(obj runtime.Object, f func(u *unstructured.Unstructured)) {
	o := obj.(*Object)
	managed := o.ManagedFields
	u := withoutManagedFields(o)
	f(u)
	if err := o.SetContent(u.Object); err != nil {
		panic(fmt.Sprintf("a custom resource does not decode: %v", err))
	}
	if _, set, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields"); !set {
		o.ManagedFields = canonicalManagedFields(managed)
	}
}
