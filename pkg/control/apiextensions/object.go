package apiextensions

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// Object is a custom resource. Its metadata is a typed ObjectMeta, so that the registry's
// generic store (validation of metadata, status and spec through reflection, managed
// fields) treats it as it treats a built-in kind; the rest of it is JSON values as they
// came, spec and status broken out for the status subresource and generation.
type Object struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              any `json:"spec,omitempty"`
	Status            any `json:"status,omitempty"`
	// Fields are the other top-level fields.
	Fields map[string]any `json:"-"`
	// unknownMetadata are the fields of the metadata decoded that ObjectMeta does not have,
	// as strict decoding errors: upstream reports them as unknown fields.
	unknownMetadata []string
}

var _ runtime.Object = &Object{}

// Content is the object as unstructured JSON values (what the schema packages work on):
// a copy of spec, status and the other fields, the metadata as the unstructured converter
// makes it (as its JSON would decode; the managed fields' JSON decoded once per shape). No
// JSON round trip: every create runs this several times (defaulting, strategy, validation,
// field manager), see docs/performance.md.
func (o *Object) Content() (map[string]any, error) {
	return o.content(true)
}

// content is Content, without metadata.managedFields unless managed.
func (o *Object) content(managed bool) (map[string]any, error) {
	m := o.ObjectMeta
	m.ManagedFields = nil
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		return nil, err
	}
	if managed && len(o.ManagedFields) > 0 {
		if meta["managedFields"], err = managedFieldsContent(o.ManagedFields); err != nil {
			return nil, err
		}
	}
	out := runtime.DeepCopyJSON(o.withoutMetadata())
	toInt64(out)
	out["metadata"] = meta
	return out, nil
}

// ToUnstructured is Content for runtime.DefaultUnstructuredConverter (what the field
// manager's type converter calls), which would otherwise encode the object to JSON and
// decode it.
func (o *Object) ToUnstructured() any {
	c, err := o.Content()
	if err != nil {
		panic(fmt.Sprintf("a custom resource does not convert: %v", err)) // its metadata is a typed ObjectMeta
	}
	return c
}

// SetContent replaces the object with unstructured JSON values, which it takes (not
// copies): the caller gives them up.
func (o *Object) SetContent(content map[string]any) error {
	var meta metav1.ObjectMeta
	switch m := content["metadata"].(type) {
	case nil:
	case map[string]any:
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &meta); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	default:
		return fmt.Errorf("metadata: want an object, got %T", m)
	}
	*o = Object{ObjectMeta: meta}
	o.setWithoutMetadata(toInt64(content).(map[string]any))
	return nil
}

// withoutMetadata is the object's content but for its metadata: apiVersion, kind, spec,
// status and the other fields, the values themselves rather than copies.
func (o *Object) withoutMetadata() map[string]any {
	out := make(map[string]any, len(o.Fields)+5) // and metadata, if MarshalJSON adds it
	for k, v := range o.Fields {
		out[k] = v
	}
	if o.APIVersion != "" {
		out["apiVersion"] = o.APIVersion
	}
	if o.Kind != "" {
		out["kind"] = o.Kind
	}
	if o.Spec != nil {
		out["spec"] = o.Spec
	}
	if o.Status != nil {
		out["status"] = o.Status
	}
	return out
}

// setWithoutMetadata replaces what withoutMetadata gave, keeping the metadata.
func (o *Object) setWithoutMetadata(content map[string]any) {
	o.Spec, o.Status, o.Fields = content["spec"], content["status"], nil
	o.APIVersion, _ = content["apiVersion"].(string)
	o.Kind, _ = content["kind"].(string)
	for k, v := range content {
		switch k {
		case "apiVersion", "kind", "metadata", "spec", "status":
		default:
			if o.Fields == nil {
				o.Fields = map[string]any{}
			}
			o.Fields[k] = v
		}
	}
}

// MarshalJSON writes the object with its other fields beside apiVersion, kind, metadata,
// spec and status.
func (o *Object) MarshalJSON() ([]byte, error) {
	out := o.withoutMetadata()
	out["metadata"] = &o.ObjectMeta
	return json.Marshal(out)
}

// UnmarshalJSON reads an object; numbers stay exact (int64 where they are integers).
func (o *Object) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*o = Object{}
	for k, v := range raw {
		var err error
		switch k {
		case "apiVersion":
			err = json.Unmarshal(v, &o.APIVersion)
		case "kind":
			err = json.Unmarshal(v, &o.Kind)
		case "metadata":
			o.unknownMetadata, err = decodeMetadata(v, &o.ObjectMeta)
		case "spec":
			o.Spec, err = jsonValue(v)
		case "status":
			o.Status, err = jsonValue(v)
		default:
			if o.Fields == nil {
				o.Fields = map[string]any{}
			}
			o.Fields[k], err = jsonValue(v)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// decodeMetadata decodes metadata as kube-apiserver does (case-sensitive), and says which
// of its fields are unknown or repeated ("unknown field \"metadata.x\"").
func decodeMetadata(data []byte, meta *metav1.ObjectMeta) ([]string, error) {
	// Its duplicate fields are the body's, which the API server finds on the whole body.
	strictErrs, err := kjson.UnmarshalStrict(data, meta, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, e := range strictErrs {
		if fe, ok := e.(kjson.FieldError); ok {
			fe.SetFieldPath("metadata." + fe.FieldPath())
			unknown = append(unknown, fe.Error())
		}
	}
	return unknown, nil
}

// jsonValue decodes a JSON value as unstructured.Unstructured does: integers as int64,
// other numbers as float64.
func jsonValue(data []byte) (any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return runtime.DeepCopyJSONValue(toInt64(v)), nil
}

func toInt64(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = toInt64(x)
		}
	case []any:
		for i, x := range v {
			v[i] = toInt64(x)
		}
	case float64:
		if i := int64(v); float64(i) == v && v >= -(1<<53) && v <= 1<<53 {
			return i
		}
	}
	return v
}

// DeepCopyObject copies the object.
func (o *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: o.TypeMeta}
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if o.Spec != nil {
		out.Spec = runtime.DeepCopyJSONValue(o.Spec)
	}
	if o.Status != nil {
		out.Status = runtime.DeepCopyJSONValue(o.Status)
	}
	if o.Fields != nil {
		out.Fields = runtime.DeepCopyJSON(o.Fields)
	}
	return out
}

// List is a list of custom resources.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Object `json:"items"`
}

// DeepCopyObject copies the list.
func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Object, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Object)
	}
	return out
}
