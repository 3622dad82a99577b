package apiserver

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// serveGet sends the object's shared JSON or shared PartialObjectMetadata, or the decoded
// object as protobuf or a Table.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, rep representation) error {
	kv, err := s.store.Get(r.Context(), generic.Key(res, info.Namespace, info.Name))
	if errors.Is(err, store.ErrNotFound) {
		err = apierrors.NewNotFound(res.GroupResource(), info.Name)
	}
	if err != nil {
		return err
	}
	stored := s.encodings.object(res, kv.Value, kv.Revision)
	var body []byte
	switch {
	case rep.as == "" && !rep.protobuf:
		body, err = stored.JSON()
	case rep.as == asPartialMetadata:
		body, err = stored.PartialMetadata(rep.version)
	default: // protobuf, a Table, or a PartialObjectMetadataList, which respond refuses
		obj, err := stored.Object()
		if err != nil {
			return err
		}
		return s.respond(w, r, res, http.StatusOK, obj)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// The body is shared with other readers: write it as it is. A client going away mid-body
	// is not ours to report.
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
	return nil
}

// continueToken is the opaque ?continue= of a paginated list: where the next page starts.
type continueToken struct {
	ResourceVersion int64  `json:"rv"`
	StartAfter      string `json:"start"`
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, rep representation) error {
	sel, err := parseSelectors(r, res)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	var startAfter string
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			return err
		}
		startAfter = tok.StartAfter
	}
	kvs, rev, err := s.store.List(r.Context(), generic.ListPrefix(res, info.Namespace))
	if err != nil {
		return err
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}
	// The store lists in key order: a page starts after the key the last one ended at.
	first := sort.Search(len(kvs), func(i int) bool { return kvs[i].Key > startAfter })
	var items []*storedObject
	for i := first; i < len(kvs); i++ {
		kv := kvs[i]
		item := s.encodings.object(res, kv.Value, kv.Revision)
		matches, err := sel.matchesStored(res, item)
		if err != nil {
			return err
		}
		if !matches {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			listMeta.Continue = encodeContinue(continueToken{ResourceVersion: rev, StartAfter: kvs[i-1].Key})
			break
		}
		items = append(items, item)
	}
	if err := rep.suits(res, true); err != nil {
		return err
	}
	switch rep.as {
	case asTable:
		objs := make([]runtime.Object, len(items))
		for i, item := range items {
			if objs[i], err = item.Object(); err != nil {
				return err
			}
		}
		table, err := buildTable(r, res, objs, listMeta)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, table)
		return nil
	case asPartialMetadataList:
		partial := func(item *storedObject) ([]byte, error) { return item.PartialMetadata(rep.version) }
		return writeList(w, metav1.TypeMeta{Kind: asPartialMetadataList, APIVersion: rep.apiVersion()}, listMeta, items, partial)
	}
	return writeList(w, metav1.TypeMeta{Kind: res.Kind + "List", APIVersion: res.GroupVersion().String()}, listMeta, items, (*storedObject).JSON)
}

// writeList writes what encoding a typed list would, but puts the items' shared encodings
// (encode's) in the list envelope instead of encoding every object.
func writeList(w http.ResponseWriter, typeMeta metav1.TypeMeta, listMeta metav1.ListMeta, items []*storedObject, encode func(*storedObject) ([]byte, error)) error {
	bodies := make([][]byte, len(items))
	for i, item := range items {
		var err error
		if bodies[i], err = encode(item); err != nil {
			return err
		}
	}
	head, err := json.Marshal(typeMeta)
	if err != nil {
		return err
	}
	metadata, err := json.Marshal(listMeta)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// Errors below are the client going away mid-body, not ours to report.
	out := bufio.NewWriterSize(w, 64<<10)
	_, _ = out.Write(head[:len(head)-1]) // {"kind":...,"apiVersion":... without the closing brace
	_, _ = out.WriteString(`,"metadata":`)
	_, _ = out.Write(metadata)
	_, _ = out.WriteString(`,"items":[`)
	for i, body := range bodies {
		if i > 0 {
			_ = out.WriteByte(',')
		}
		_, _ = out.Write(body)
	}
	_, _ = out.WriteString("]}\n")
	_ = out.Flush()
	return nil
}

func parseLimit(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("limit must be a non-negative integer, not %q", v))
	}
	return n, nil
}

func encodeContinue(t continueToken) string {
	data, _ := json.Marshal(t) // two plain fields cannot fail to marshal
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &t)
	}
	if err != nil {
		return t, apierrors.NewBadRequest("invalid continue token: " + err.Error())
	}
	return t, nil
}
