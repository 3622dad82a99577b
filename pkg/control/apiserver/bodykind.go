package apiserver

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// bodyKindError is kube-apiserver's answer to a body whose apiVersion and kind (a JSON
// body's, or a protobuf envelope's) are not want's, nil when they name want's type: first
// what its decoder finds (an unregistered kind, one that does not convert to want's internal
// type, a custom resource without a kind), worded as its handlers' transformDecodeError
// words it, then the handlers' own check of the version.
func bodyKindError(actual, want schema.GroupVersionKind, data []byte) error {
	if want.Empty() {
		return nil
	}
	if registry.IsCustom(want) {
		if actual.Kind == "" {
			return unrecognized(want, runtime.NewMissingKindErr(string(data)), data)
		}
		// Another kind is the object's validation error (kind: Invalid value), as in kube.
		return versionMismatch(actual, want)
	}
	actual = withDefaults(actual, want)
	if err := decoderKindError(actual, want); err != nil {
		return cannotHandleAs(actual, want, err)
	}
	return versionMismatch(actual, want)
}

// decoderKindError is what kube's decoder says when a built-in kind's body of kind actual
// (defaults filled) is decoded into want's internal type, nil when it can be.
func decoderKindError(actual, want schema.GroupVersionKind) error {
	if !recognizes(actual, want) {
		// The scheme's name is the one kube-apiserver v1.36 prints for every built-in kind.
		return fmt.Errorf("no kind %q is registered for version %q in scheme %q", actual.Kind, actual.GroupVersion(), "pkg/runtime/scheme.go:111")
	}
	if internalKind(actual.GroupKind()) != internalKind(want.GroupKind()) {
		from, _ := scheme.Scheme.New(actual)
		return fmt.Errorf("converting (%v) to (%s.%s): unknown conversion", reflect.TypeOf(from).Elem(), internalPackage(want.GroupKind()), want.Kind)
	}
	return nil
}

// withDefaults fills what the body left out from the request's kind, as apimachinery's
// serializers do (gvkWithDefaults).
func withDefaults(actual, want schema.GroupVersionKind) schema.GroupVersionKind {
	if actual.Kind == "" {
		actual.Kind = want.Kind
	}
	if actual.Version == "" && (actual.Group == "" || actual.Group == want.Group) {
		actual.Group, actual.Version = want.Group, want.Version
	}
	return actual
}

// recognizes tells a kind kube-apiserver's scheme for want decodes: the built-in kinds',
// except for CRDs and APIServices, whose servers know their own group only.
func recognizes(actual, want schema.GroupVersionKind) bool {
	switch want.Group {
	case "apiextensions.k8s.io", "apiregistration.k8s.io":
		if actual.Group != want.Group {
			return false
		}
	}
	return scheme.Scheme.Recognizes(actual)
}

// sharedInternal are the kinds of one group that kube decodes into another group's
// internal type (pkg/apis/events and pkg/apis/extensions register no types of their own).
var sharedInternal = map[schema.GroupKind]schema.GroupKind{
	{Group: "events.k8s.io", Kind: "Event"}:      {Kind: "Event"},
	{Group: "extensions", Kind: "Deployment"}:    {Group: "apps", Kind: "Deployment"},
	{Group: "extensions", Kind: "DaemonSet"}:     {Group: "apps", Kind: "DaemonSet"},
	{Group: "extensions", Kind: "ReplicaSet"}:    {Group: "apps", Kind: "ReplicaSet"},
	{Group: "extensions", Kind: "Ingress"}:       {Group: "networking.k8s.io", Kind: "Ingress"},
	{Group: "extensions", Kind: "NetworkPolicy"}: {Group: "networking.k8s.io", Kind: "NetworkPolicy"},
}

// internalKind is the internal type kube decodes a kind into: bodies of the same internal
// type convert, whatever their version.
func internalKind(gk schema.GroupKind) schema.GroupKind {
	if shared, ok := sharedInternal[gk]; ok {
		return shared
	}
	return gk
}

// internalPackage is the Go package of gk's internal type in kube (pkg/apis/NAME), which
// a conversion error names.
func internalPackage(gk schema.GroupKind) string {
	switch group := internalKind(gk).Group; group {
	case "":
		return "core"
	case "internal.apiserver.k8s.io":
		return "apiserverinternal"
	default:
		return strings.Split(group, ".")[0]
	}
}

// versionMismatch is the handlers' check after decoding: the body's version must be the
// request's.
func versionMismatch(actual, want schema.GroupVersionKind) error {
	if actual.GroupVersion() == want.GroupVersion() {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), want.GroupVersion()))
}

// cannotHandleAs is transformDecodeError's words when the body named its kind:
// `Secret in version "v1" cannot be handled as a ConfigMap: ...`.
func cannotHandleAs(actual, want schema.GroupVersionKind, err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, want.Kind, err))
}

// unrecognized is transformDecodeError's words when the decoder found no kind in the body,
// with the start of the body as its summarizeData shows it.
func unrecognized(want schema.GroupVersionKind, err error, data []byte) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", want.Kind, err, summarize(data)))
}

// summarize is the first 30 bytes of a body: as text when it looks like a JSON object, in
// hex otherwise (apiserver's handlers summarizeData).
func summarize(data []byte) string {
	const limit = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > limit {
			return string(data[:limit]) + " ..."
		}
		return string(data)
	case len(data) > limit:
		return hex.EncodeToString(data[:limit]) + " ..."
	default:
		return hex.EncodeToString(data)
	}
}
