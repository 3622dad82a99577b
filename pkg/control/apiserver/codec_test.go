package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/minik8s/minik8s/pkg/control/apiextensions"
	"github.com/minik8s/minik8s/pkg/control/registry"
)

func bodyRequest(contentType string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods", bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	return r
}

func protobufBody(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobufSerializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

func TestDecodeBodyProtobufGoesStraightIntoTheObject(t *testing.T) {
	sent := podNamed("p", "web")
	sent.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	var got corev1.Pod
	warnings, err := decodeBody(bodyRequest(runtime.ContentTypeProtobuf, protobufBody(t, sent)), &got, podGVK, validationStrict)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("decodeBody: %v, warnings %v", err, warnings)
	}
	if got.Name != "p" || got.Labels["app"] != "web" || len(got.Spec.Containers) != 1 {
		t.Errorf("decoded %+v", got.ObjectMeta)
	}
}

// A body that is not the kind of its URL gets kube-apiserver v1.36's words, compared with the
// real binary: the decoder's (an unreadable kind, an unregistered one, one that does not
// convert to the URL's type), then the handlers' version check.
func TestDecodeBodyKindErrorsAsKube(t *testing.T) {
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	cm := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, tc := range []struct {
		contentType, body string
		want              schema.GroupVersionKind
		err               string
	}{
		{"application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"`, cm,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)`},
		{"application/json", `xx`, cm,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'x' looking for beginning of value (7878)`},
		{"application/json", ``, cm,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
		{"application/json", `[]`, cm,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)`},
		{"application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} trailing`, cm,
			`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 't' after top-level value ({"apiVersion":"v1","kind":"Con ...)`},
		{"application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, cm,
			`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion`},
		{"application/json", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"a"}}`, cm,
			`ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v2" in scheme "pkg/runtime/scheme.go:111"`},
		{"application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, deploy,
			`Secret in version "v1" cannot be handled as a Deployment: converting (v1.Secret) to (apps.Deployment): unknown conversion`},
		{"application/json", `{"apiVersion":"apps/v1","kind":"Foo","metadata":{"name":"a"}}`, deploy,
			`Foo in version "v1" cannot be handled as a Deployment: no kind "Foo" is registered for version "apps/v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"application/json", `{"apiVersion":"apps/v1beta2","kind":"Deployment","metadata":{"name":"a"}}`, deploy,
			`the API version in the data (apps/v1beta2) does not match the expected API version (apps/v1)`},
		{"application/json", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"a"}}`, deploy,
			`StatefulSet in version "v1" cannot be handled as a Deployment: converting (v1.StatefulSet) to (apps.Deployment): unknown conversion`},
		{"application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`, schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
			`ConfigMap in version "v1" cannot be handled as a NetworkPolicy: converting (v1.ConfigMap) to (networking.NetworkPolicy): unknown conversion`},
		{"application/json", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"a"}}`, corev1.SchemeGroupVersion.WithKind("Event"),
			`the API version in the data (events.k8s.io/v1) does not match the expected API version (v1)`},
		{"application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
			`Secret in version "v1" cannot be handled as a CustomResourceDefinition: no kind "Secret" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"application/yaml", "apiVersion: apps/v1\nkind: Pod\nmetadata:\n  name: s\n", podGVK,
			`Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for version "apps/v1" in scheme "pkg/runtime/scheme.go:111"`},
		{runtime.ContentTypeProtobuf, string(protobufBody(t, svc)), podGVK,
			`Service in version "v1" cannot be handled as a Pod: converting (v1.Service) to (core.Pod): unknown conversion`},
	} {
		obj, _ := scheme.Scheme.New(tc.want)
		_, err := decodeBody(bodyRequest(tc.contentType, []byte(tc.body)), obj, tc.want, validationStrict)
		if !apierrors.IsBadRequest(err) || err.Error() != tc.err {
			t.Errorf("%s %.40q to %s:\n got %v\nwant 400 %s", tc.contentType, tc.body, tc.want.Kind, err, tc.err)
		}
	}
	// A body that names no kind or version is of the URL's.
	var got corev1.ConfigMap
	if _, err := decodeBody(bodyRequest("application/json", []byte(`{"metadata":{"name":"a"}}`)), &got, cm, validationStrict); err != nil || got.Name != "a" {
		t.Errorf("no kind: got %v, name %q", err, got.Name)
	}
}

// A custom resource's body is decoded as kube's unstructured decoder does: a kind it must
// have, a version that must be the URL's, and another kind left to validation.
func TestDecodeRequestCustomResourceKind(t *testing.T) {
	res := widgetResource(t)
	for _, tc := range []struct{ body, err string }{
		{`{"apiVersion":"ex.com/v1","metadata":{"name":"a"}}`,
			`the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{"apiVersion":"ex.com/v1","metadata":{"name":"a"}}' ({"apiVersion":"ex.com/v1","met ...)`},
		{`{"kind":"Widget","metadata":{"name":"a"}}`, `the API version in the data () does not match the expected API version (ex.com/v1)`},
		{`{"apiVersion":"ex.com/v2","kind":"Widget","metadata":{"name":"a"}}`, `the API version in the data (ex.com/v2) does not match the expected API version (ex.com/v1)`},
		{`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}`, `the API version in the data (v1) does not match the expected API version (ex.com/v1)`},
		{`[]`, `the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b5d)`},
		{`{"apiVersion":"ex.com/v1","kind":"Gadget","metadata":{"name":"a"}}`, ""},
	} {
		_, _, err := (&Server{}).decodeRequest(bodyRequest("application/json", []byte(tc.body)), res, requestInfo{Namespace: "default"})
		if tc.err == "" && err != nil || tc.err != "" && (!apierrors.IsBadRequest(err) || err.Error() != tc.err) {
			t.Errorf("%s:\n got %v\nwant %s", tc.body, err, tc.err)
		}
	}
}

func TestDecodeBodyJSONErrorsAndWarnings(t *testing.T) {
	var pod corev1.Pod
	_, err := decodeBody(bodyRequest("application/json", []byte(`{"metadata":{"name":"p"`)), &pod, podGVK, validationWarn)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "json parse error: unexpected end of JSON input") {
		t.Errorf("truncated JSON: got %v", err)
	}
	body := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"bogus":1}}`)
	warnings, err := decodeBody(bodyRequest("application/json", body), &pod, podGVK, validationWarn)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "bogus") {
		t.Errorf("Warn: got %v, warnings %v; want one warning naming the field", err, warnings)
	}
	// kube-apiserver's words (transformDecodeError), which kubectl users know.
	_, err = decodeBody(bodyRequest("application/json", body), &pod, podGVK, validationStrict)
	if want := `Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus"`; !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("Strict: got %v, want 400 %q", err, want)
	}
	wrongType := []byte("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, command: [true]}]\n")
	_, err = decodeBody(bodyRequest("application/yaml", wrongType), &pod, podGVK, validationStrict)
	if want := `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal bool into Go struct field Container.spec.containers.command of type string`; !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("a bool for a string: got %v, want 400 %q", err, want)
	}
	_, err = decodeBody(bodyRequest("text/plain", body), &pod, podGVK, validationWarn)
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("text/plain: got %v, want 415", err)
	}
}

// A YAML body's duplicate keys are strict decoding errors too, found on the YAML itself
// before the JSON it converts to drops them, and worded and split into warnings as
// kube-apiserver does (apimachinery's json.Serializer.unmarshal: YAMLToJSONStrict first;
// apiserver's handlers/rest.go: addStrictDecodingWarnings, parseYAMLWarnings; the cases
// post-strict-validation-yaml and post-warn-validation-yaml of kube's
// test/integration/apiserver/field_validation_test.go).
func TestDecodeBodyYAMLDuplicateFields(t *testing.T) {
	body := []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  name: q\nspec:\n  bogus: 1\n  containers:\n  - name: c\n    image: i\n    image: j\n")
	var pod corev1.Pod
	_, err := decodeBody(bodyRequest("application/yaml", body), &pod, podGVK, validationStrict)
	want := `Pod in version "v1" cannot be handled as a Pod: strict decoding error: yaml: unmarshal errors:
  line 5: key "name" already set in map
  line 11: key "image" already set in map, unknown field "spec.bogus"`
	if !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Errorf("Strict: got %v\nwant 400 %q", err, want)
	}
	warnings, err := decodeBody(bodyRequest("application/yaml", body), &pod, podGVK, validationWarn)
	wantWarnings := []string{`line 5: key "name" already set in map`, `line 11: key "image" already set in map`, `unknown field "spec.bogus"`}
	if err != nil || strings.Join(warnings, "|") != strings.Join(wantWarnings, "|") {
		t.Errorf("Warn: got %v, warnings %q\nwant warnings %q", err, warnings, wantWarnings)
	}
	warnings, err = decodeBody(bodyRequest("application/yaml", body), &pod, podGVK, validationIgnore)
	if err != nil || len(warnings) > 0 || pod.Name != "q" || pod.Spec.Containers[0].Image != "j" {
		t.Errorf("Ignore: got %v, warnings %q, name %q; want the last of each duplicate, no warnings", err, warnings, pod.Name)
	}
}

func TestDeleteOptionsFromAnyBody(t *testing.T) {
	background := metav1.DeletePropagationBackground
	sent := &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, PropagationPolicy: &background}
	for name, r := range map[string]*http.Request{
		"protobuf": bodyRequest(runtime.ContentTypeProtobuf, protobufBody(t, sent)),
		"json":     bodyRequest("application/json", []byte(`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`)),
	} {
		opts, err := deleteOptions(r)
		if err != nil || opts.PropagationPolicy == nil || *opts.PropagationPolicy != background {
			t.Errorf("%s: got %+v, %v", name, opts, err)
		}
	}
	malformed := bodyRequest("application/json", []byte(`{"kind":"DeleteOptions",`))
	if _, err := deleteOptions(malformed); !apierrors.IsBadRequest(err) || err.Error() != "the body of the request could not be decoded as JSON: unexpected end of JSON input (at byte 24)" {
		t.Errorf("malformed body: got %v, want 400 naming the syntax error and where", err)
	}
	r := httptest.NewRequest(http.MethodDelete, "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=3", nil)
	if opts, err := deleteOptions(r); err != nil || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 3 {
		t.Errorf("no body: got %+v, %v", opts, err)
	}
}

// widgetResource is the resource of a custom resource Widget whose spec declares size only.
func widgetResource(t *testing.T) *registry.Resource {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(`
metadata: {name: widgets.ex.com}
spec:
  group: ex.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
status:
  acceptedNames: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
`), crd); err != nil {
		t.Fatal(err)
	}
	resources, err := apiextensions.Resources(crd, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resources[0]
}

// A custom resource's duplicate fields and the fields its schema does not declare are one
// list of strict decoding errors, duplicates first, as kube-apiserver's (apimachinery's
// json.Serializer.unmarshal strict-decodes an Unstructured through a map, then
// apiextensions-apiserver's pruning adds the unknown fields; the cases crd-post-strict-validation
// and crd-post-strict-validation-yaml of kube's test/integration/apiserver/field_validation_test.go).
func TestDecodeRequestCustomResourceStrictErrors(t *testing.T) {
	res := widgetResource(t)
	jsonBody := `{"apiVersion":"ex.com/v1","kind":"Widget","metadata":{"name":"w","name":"w"},"spec":{"size":1,"size":2,"foo":1}}`
	yamlBody := "apiVersion: ex.com/v1\nkind: Widget\nmetadata:\n  name: w\n  name: w\nspec:\n  size: 1\n  size: 2\n  foo: 1\n"
	for _, tc := range []struct {
		name, contentType, body string
		directive               fieldValidation
		wantErr                 string
		wantWarnings            []string
	}{
		{"json strict", "application/json", jsonBody, validationStrict,
			`Widget in version "v1" cannot be handled as a Widget: strict decoding error: duplicate field "metadata.name", duplicate field "spec.size", unknown field "spec.foo"`, nil},
		{"yaml strict", "application/yaml", yamlBody, validationStrict,
			"Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 8: key \"size\" already set in map, unknown field \"spec.foo\"", nil},
		{"json warn", "application/json", jsonBody, validationWarn, "", []string{`duplicate field "metadata.name"`, `duplicate field "spec.size"`, `unknown field "spec.foo"`}},
		{"yaml warn", "application/yaml", yamlBody, validationWarn, "", []string{`line 5: key "name" already set in map`, `line 8: key "size" already set in map`, `unknown field "spec.foo"`}},
		{"json ignore", "application/json", jsonBody, validationIgnore, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bodyRequest(tc.contentType, []byte(tc.body))
			r.URL.RawQuery = "fieldValidation=" + string(tc.directive)
			obj, warnings, err := (&Server{}).decodeRequest(r, res, requestInfo{Namespace: "default"})
			if tc.wantErr != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.wantErr {
					t.Errorf("got %v\nwant 400 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(warnings, "|") != strings.Join(tc.wantWarnings, "|") {
				t.Fatalf("got %v, warnings %q\nwant warnings %q", err, warnings, tc.wantWarnings)
			}
			if spec, _ := obj.(*apiextensions.Object).Spec.(map[string]any); spec["size"] != int64(2) {
				t.Errorf("spec %v, want the last of the duplicates, size 2", spec)
			}
		})
	}
}

// A patched custom resource's undeclared fields are strict decoding errors of the patch,
// after the patch's own duplicate fields: one 422 on "patch" under Strict, warnings in that
// order under Warn, as kube-apiserver's jsonPatcher.applyPatchToCurrentObject gives them for
// a custom resource (its decoder reports the pruned fields as strict errors; the cases
// crd-merge-patch-strict-validation and crd-json-patch-strict-validation of kube's
// test/integration/apiserver/field_validation_test.go).
func TestApplyPatchCustomResourceStrictErrors(t *testing.T) {
	res := widgetResource(t)
	cur, _ := res.New()
	if _, err := decodeInto([]byte(`{"apiVersion":"ex.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":1}}`), cur, validationStrict, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		pt           types.PatchType
		patch        string
		directive    fieldValidation
		wantErr      string
		wantWarnings []string
	}{
		{"merge strict", types.MergePatchType, `{"spec":{"size":3,"size":4,"foo":1}}`, validationStrict,
			`strict decoding error: duplicate field "spec.size", unknown field "spec.foo"`, nil},
		{"json strict", types.JSONPatchType, `[{"op":"add","path":"/spec/foo","value":1}]`, validationStrict,
			`strict decoding error: unknown field "spec.foo"`, nil},
		{"merge warn", types.MergePatchType, `{"spec":{"size":3,"size":4,"foo":1}}`, validationWarn,
			"", []string{`duplicate field "spec.size"`, `unknown field "spec.foo"`}},
		{"merge ignore", types.MergePatchType, `{"spec":{"size":3,"size":4,"foo":1}}`, validationIgnore, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := applyPatch(res, tc.pt, cur, []byte(tc.patch), tc.directive)
			if tc.wantErr != "" {
				if !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), ` "" is invalid: patch: Invalid value: `) {
					t.Errorf("got %v\nwant 422 on patch ending %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(warnings, "|") != strings.Join(tc.wantWarnings, "|") {
				t.Errorf("got %v, warnings %q\nwant warnings %q", err, warnings, tc.wantWarnings)
			}
		})
	}
}
