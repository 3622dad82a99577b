package apiserver

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// The meta.k8s.io views of an object a client may ask for with Accept's as= parameter.
const (
	asTable               = "Table"
	asPartialMetadata     = "PartialObjectMetadata"
	asPartialMetadataList = "PartialObjectMetadataList"
)

// representation is what a response carries: the object (or list) itself when as is empty,
// else its meta.k8s.io view named by as, of version v1 or v1beta1. protobuf says the object
// itself goes as Kubernetes protobuf rather than JSON.
type representation struct {
	as       string
	version  string
	protobuf bool
	yaml     bool // the JSON answer goes as YAML (yamlWriter)
}

func (rep representation) apiVersion() string { return "meta.k8s.io/" + rep.version }

// negotiate picks, from the Accept header, the representation to answer with: that of the
// media type with the highest q (the first of equal ones) that we can produce. We answer in
// JSON or YAML, and one object or a watch's events (not a list or a meta.k8s.io view) also in
// protobuf when protobuf says so, which client-go asks for first: decoding it costs clients a
// fraction of decoding JSON. Other media types are skipped, as are views Kubernetes does not
// have; a header naming nothing we can produce gets 406 as from Kubernetes. No header asks
// for the object itself, in JSON.
func negotiate(r *http.Request, protobuf bool) (representation, error) {
	header := r.Header.Get("Accept")
	if header == "" {
		return representation{}, nil
	}
	var best representation
	bestQ := -1.0
	for _, part := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(part)
		if err != nil || (mt != "application/json" && mt != "application/*" && mt != "*/*" && mt != runtime.ContentTypeProtobuf && mt != runtime.ContentTypeYAML) {
			continue
		}
		rep, ok := viewOf(params)
		switch mt {
		case runtime.ContentTypeProtobuf:
			ok = ok && protobuf && rep.as == ""
			rep.protobuf = true
		case runtime.ContentTypeYAML:
			rep.yaml = true
		}
		q := 1.0
		if v, found := params["q"]; found {
			q, _ = strconv.ParseFloat(v, 64) // an unreadable q is 0, as in Kubernetes
		}
		if ok && q > bestQ {
			best, bestQ = rep, q
		}
	}
	if bestQ < 0 {
		msg := "only the following media types are accepted: application/json, application/yaml"
		if protobuf {
			msg += ", application/vnd.kubernetes.protobuf"
		}
		return representation{}, notAcceptable(msg)
	}
	return best, nil
}

// viewOf reads the as=, g= and v= parameters of a media type; ok is false for a view we cannot
// produce.
func viewOf(params map[string]string) (rep representation, ok bool) {
	as, g, v := params["as"], params["g"], params["v"]
	if as == "" && g == "" && v == "" {
		return representation{}, true
	}
	if g != "meta.k8s.io" || (v != "v1" && v != "v1beta1") {
		return representation{}, false
	}
	switch as {
	case asTable, asPartialMetadata, asPartialMetadataList:
		return representation{as: as, version: v}, true
	}
	return representation{}, false
}

// suits refuses, as Kubernetes does, a PartialObjectMetadata of a list or a
// PartialObjectMetadataList of one object.
func (rep representation) suits(res *registry.Resource, list bool) error {
	switch {
	case list && rep.as == asPartialMetadata:
		return notAcceptable(fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%sList)", res.Kind))
	case !list && rep.as == asPartialMetadataList:
		return notAcceptable(fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%s)", res.Kind))
	}
	return nil
}

// protobufAnswers says whether a request's answer may go as protobuf: one object or a stream
// of events of one object each, of a kind with protobuf marshalling, or a list of such
// objects whose list kind has it too. A LIST sends each item's shared protobuf (see
// protobufList), as a watch event does. deletecollection answers in JSON.
func (s *Server) protobufAnswers(res *registry.Resource, verb string) bool {
	switch verb {
	case "list":
		return s.protobufLists[res]
	case "deletecollection":
		return false
	}
	return s.protobufKinds[res]
}

// protobufResources are the resources whose kind has protobuf marshalling, as every
// k8s.io/api kind has, and those whose list kind has it too: found once, not per request.
func protobufResources(reg *registry.Registry) (kinds, lists map[*registry.Resource]bool) {
	kinds, lists = map[*registry.Resource]bool{}, map[*registry.Resource]bool{}
	for _, res := range reg.Resources() {
		obj, err := res.New()
		_, ok := obj.(runtime.ProtobufMarshaller)
		kinds[res] = err == nil && ok
		list, err := scheme.Scheme.New(res.GroupVersion().WithKind(res.Kind + "List"))
		_, ok = list.(runtime.ProtobufMarshaller)
		lists[res] = kinds[res] && err == nil && ok
	}
	return kinds, lists
}

// protobufEncodable says whether obj can go as protobuf: it has protobuf marshalling, as
// every k8s.io/api kind has, and its kind is set for the envelope to name.
func protobufEncodable(obj runtime.Object) bool {
	_, ok := obj.(runtime.ProtobufMarshaller)
	return ok && !obj.GetObjectKind().GroupVersionKind().Empty()
}

func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}

// streamable refuses, as kube-apiserver's watch does, a watch asked for in YAML, which has no
// stream framing: 406 naming the stream media types.
func (rep representation) streamable(protobuf bool) error {
	if !rep.yaml {
		return nil
	}
	msg := "only the following media types are accepted: application/json;stream=watch"
	if protobuf {
		msg += ", application/vnd.kubernetes.protobuf;stream=watch"
	}
	return notAcceptable(msg)
}

// asYAML is what kube-apiserver's YAML serializer makes of a JSON answer (an object, a
// list, a Table, an error's Status): sigs.k8s.io/yaml's JSONToYAML, which the serializer
// runs on the object's JSON.
func asYAML(body []byte, header http.Header) []byte {
	out, err := yaml.JSONToYAML(body)
	if err != nil {
		return body
	}
	header.Set("Content-Type", runtime.ContentTypeYAML)
	return out
}
