package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/filters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxBodyBytes is the largest request body accepted, as in Kubernetes (3 MiB).
const MaxBodyBytes = 3 << 20

// decodeBody decodes a request body into obj, an object of kind want (any kind when want is
// empty): JSON, YAML, or Kubernetes protobuf (client-go's default for built-in kinds, decoded
// straight into obj). It refuses oversized bodies, media types we cannot decode, and a body
// naming another kind. Unknown and duplicate JSON fields are handled per directive, returning
// the warnings for Warn (protobuf has neither).
//
// undeclared, when given, names the fields of the decoded object that its schema does not
// declare (registry.Rules.UnknownFields: a custom resource's); they are strict decoding
// errors after the decoding's own.
func decodeBody(r *http.Request, obj runtime.Object, want schema.GroupVersionKind, directive fieldValidation, undeclared ...func(runtime.Object) ([]string, error)) (warnings []string, err error) {
	mediaType := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, unsupportedBody(want)
		}
		mediaType = mt
	}
	if mediaType == runtime.ContentTypeProtobuf && registry.IsCustom(want) ||
		mediaType != runtime.ContentTypeProtobuf && !strings.HasSuffix(mediaType, "json") && !strings.HasSuffix(mediaType, "yaml") {
		return nil, unsupportedBody(want)
	}
	data, err := readRaw(r)
	if err != nil {
		return nil, err
	}
	var yamlErr error
	defer func() {
		if err == nil {
			filters.AuditRequestObject(r.Context(), obj, want)
		}
	}()
	body := data // what an error summarizes: the body as sent
	switch {
	case mediaType == runtime.ContentTypeProtobuf:
		return nil, decodeProtobuf(data, obj, want)
	case strings.HasSuffix(mediaType, "yaml"):
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml: error converting YAML to JSON: %v", err))
		}
		// Duplicate keys, which the JSON no longer has, are strict errors too, before the
		// JSON's own (apimachinery's json.Serializer.unmarshal).
		if directive != validationIgnore {
			if _, err := yaml.YAMLToJSONStrict(body); err != nil {
				yamlErr = err
			}
		}
	}
	if !want.Empty() {
		// The kind first, as kube's decoder reads it before the fields.
		actual, err := jsonserializer.DefaultMetaFactory.Interpret(data)
		if err != nil {
			return nil, unrecognized(want, err, body)
		}
		if err := bodyKindError(*actual, want, data); err != nil {
			return nil, err
		}
	}
	warnings, err = decodeInto(data, obj, directive, yamlErr, undeclared...)
	if err != nil && want.Empty() && !json.Valid(data) {
		return nil, apierrors.NewBadRequest(jsonSyntaxError(data)) // a DeleteOptions body's
	}
	return warnings, cannotHandle(want, err)
}

// readRaw reads the request body as it is, refusing one over MaxBodyBytes with 413 as
// kube-apiserver's limitedReadBody words it.
func readRaw(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(data) > MaxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxBodyBytes))
	}
	return data, nil
}

// decodeProtobuf decodes a Kubernetes protobuf body (an envelope naming the kind) into obj,
// after the envelope's kind is checked as a JSON body's is.
func decodeProtobuf(data []byte, obj runtime.Object, want schema.GroupVersionKind) error {
	var envelope runtime.Unknown
	if message, ok := bytes.CutPrefix(data, protobufMagic); ok && envelope.Unmarshal(message) == nil {
		if err := bodyKindError(schema.FromAPIVersionAndKind(envelope.APIVersion, envelope.Kind), want, data); err != nil {
			return err
		}
	}
	if _, _, err := protobufSerializer.Decode(data, nil, obj); err != nil {
		return unrecognized(want, err, data)
	}
	return nil
}

var protobufSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func jsonSyntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("the body of the request could not be decoded as JSON: %v (at byte %d)", syn, syn.Offset)
	}
	return fmt.Sprintf("the body of the request could not be decoded as JSON: %v", err)
}

// fieldValidation is the ?fieldValidation= directive: what to do with unknown or duplicate fields.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

// parseFieldValidation is the request's directive, Warn when it names none
// (fieldmanager.WithFieldOwner has refused any other value).
func parseFieldValidation(r *http.Request) fieldValidation {
	if v := fieldValidation(r.URL.Query().Get("fieldValidation")); v != "" {
		return v
	}
	return validationWarn
}

// cannotHandle puts kube-apiserver's words (its transformDecodeError) before why a body of
// the kind wanted did not decode: `Pod in version "v1" cannot be handled as a Pod: ...`.
func cannotHandle(want schema.GroupVersionKind, err error) error {
	var status apierrors.APIStatus
	if err == nil || want.Empty() || !errors.As(err, &status) {
		return err
	}
	return cannotHandleAs(want, want, errors.New(status.Status().Message))
}

// decodeInto decodes JSON into obj; unknown and duplicate fields are handled per directive,
// after yamlErr (a YAML body's duplicate keys) and before the fields undeclared names,
// returning the warnings to send for Warn.
func decodeInto(data []byte, obj runtime.Object, directive fieldValidation, yamlErr error, undeclared ...func(runtime.Object) ([]string, error)) ([]string, error) {
	strictErrs, err := kjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if _, ok := obj.(json.Unmarshaler); ok && directive != validationIgnore {
		// An object that decodes itself (an Unstructured, a custom resource) does it out of
		// the strict decoder's sight: its duplicate fields are found on a map, as
		// apimachinery's json.Serializer finds an Unstructured's.
		strictErrs, _ = kjson.UnmarshalStrict(data, &map[string]any{})
	}
	if yamlErr != nil {
		strictErrs = append([]error{yamlErr}, strictErrs...)
	}
	for _, names := range undeclared {
		msgs, err := names(obj)
		if err != nil {
			return nil, err
		}
		for _, msg := range msgs {
			strictErrs = append(strictErrs, errors.New(msg))
		}
	}
	if len(strictErrs) == 0 || directive == validationIgnore {
		return nil, nil
	}
	if directive == validationStrict {
		return nil, apierrors.NewBadRequest(runtime.NewStrictDecodingError(strictErrs).Error())
	}
	return strictDecodingWarnings(strictErrs), nil
}

// strictDecodingWarnings are strict decoding errors as kube-apiserver's warnings: one per
// error, a YAML error's lines (one per duplicate key) each a warning of its own without the
// error's prefix (apiserver's handlers/rest.go: addStrictDecodingWarnings, parseYAMLWarnings).
func strictDecodingWarnings(errs []error) []string {
	var msgs []string
	for _, e := range errs {
		msg := e.Error()
		trimmed, ok := strings.CutPrefix(msg, "yaml: unmarshal errors:\n")
		if !ok {
			trimmed, ok = strings.CutPrefix(msg, "error converting YAML to JSON: yaml: unmarshal errors:\n")
		}
		if !ok {
			msgs = append(msgs, msg)
			continue
		}
		for line := range strings.SplitSeq(trimmed, "\n") {
			msgs = append(msgs, strings.TrimSpace(line))
		}
	}
	return msgs
}

// encodeProtobuf is obj as Kubernetes protobuf: the "k8s\x00" envelope naming its kind. The
// serializer encodes a typed object into one buffer of its size, from an allocator made for
// this call only: that buffer is kept as written (memos hold it) rather than copied into a
// bytes.Buffer that grows past it.
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	var out keptWrites
	err := protobufSerializer.EncodeWithAllocator(obj, &out, &runtime.SimpleAllocator{})
	return out.b, err
}

// protobufMagic starts every Kubernetes protobuf envelope.
var protobufMagic = []byte("k8s\x00")

// protobufMessage is the object's message inside an envelope encodeProtobuf made: the raw
// field of its runtime.Unknown, not copied.
func protobufMessage(envelope []byte) ([]byte, error) {
	b, ok := bytes.CutPrefix(envelope, protobufMagic)
	if !ok {
		return nil, errors.New("not a Kubernetes protobuf envelope")
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			raw, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			return raw, nil
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil, errors.New("a Kubernetes protobuf envelope without its object")
}

// keptWrites keeps what is written to it: the first write's bytes themselves, later ones
// appended to a copy. Only for writers that never reuse a buffer they wrote (encodeProtobuf).
type keptWrites struct{ b []byte }

func (w *keptWrites) Write(p []byte) (int, error) {
	if w.b == nil {
		w.b = p[:len(p):len(p)] // an append copies rather than writing past p
	} else {
		w.b = append(w.b, p...)
	}
	return len(p), nil
}

// writeProtobuf writes obj as Kubernetes protobuf: the "k8s\x00" envelope naming its kind.
// The caller checked it is protobufEncodable.
func writeProtobuf(w http.ResponseWriter, code int, obj runtime.Object) {
	raw, _ := encodeProtobuf(obj) // the caller checked it is protobufEncodable
	writeProtobufBytes(w, code, raw)
}

// writeProtobufBytes writes an object's encodeProtobuf.
func writeProtobufBytes(w http.ResponseWriter, code int, raw []byte) {
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(code)
	_, _ = w.Write(raw) // the client going away mid-body is not ours to report
}

// unsupportedBody is kube-apiserver's 415 for a request body of a media type its codec for
// kind does not decode, naming those it does: a custom resource's has no protobuf.
func unsupportedBody(kind schema.GroupVersionKind) error {
	accepted := []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf}
	if registry.IsCustom(kind) {
		accepted = accepted[:2]
	}
	return negotiation.NewUnsupportedMediaTypeError(accepted)
}

// patchTypes are the patch media types kube-apiserver takes for res, in its order: a custom
// resource takes no strategic merge patch (apiextensions-apiserver's list).
func patchTypes(res *registry.Resource) []string {
	if registry.IsCustom(res.GVK()) {
		return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	}
	return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}
}

// patchType is the request's patch type when res takes it, else kube's 415.
func patchType(r *http.Request, res *registry.Resource) (types.PatchType, error) {
	mediaType, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	accepted := patchTypes(res)
	if !slices.Contains(accepted, mediaType) {
		return "", negotiation.NewUnsupportedMediaTypeError(accepted)
	}
	return types.PatchType(mediaType), nil
}
