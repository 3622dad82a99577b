package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

// serveGet sends the object's shared JSON or shared PartialObjectMetadata, or the decoded
// object as protobuf or a Table.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, rep representation) error {
	if _, err := parseResourceVersion(r.URL.Query().Get("resourceVersion")); err != nil {
		return err // any other is served the present, which is never older
	}
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
	// The body may be shared with other readers: write it as it is. A client going away mid-body
	// is not ours to report.
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
	return nil
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
	opts, err := listOptions(q, false)
	if err != nil {
		return err
	}
	prefix := generic.ListPrefix(res, info.Namespace)
	kvs, rev, startKey, err := s.readList(r.Context(), prefix, opts, limit)
	if err != nil {
		return err
	}
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}
	// The store lists in key order: a page starts at the key the continue token names.
	first := sort.Search(len(kvs), func(i int) bool { return kvs[i].Key >= startKey })
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
			// The next page starts just after the last key of this one, at this revision.
			if listMeta.Continue, err = storage.EncodeContinue(kvs[i-1].Key+"\x00", prefix, rev); err != nil {
				return err
			}
			if sel.empty() { // as kube-apiserver: counted only where no selector must be applied
				remaining := int64(len(kvs) - i)
				listMeta.RemainingItemCount = &remaining
			}
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
		responsewriters.WriteJSON(w, http.StatusOK, table)
		return nil
	case asPartialMetadataList:
		partial := func(item *storedObject) (pieces, error) {
			body, err := item.PartialMetadata(rep.version)
			return pieces{body}, err
		}
		return writeList(w, metav1.TypeMeta{Kind: asPartialMetadataList, APIVersion: rep.apiVersion()}, listMeta, items, partial)
	}
	if rep.protobuf {
		envelopes := make([][]byte, len(items))
		for i, item := range items {
			if envelopes[i], err = item.Protobuf(); err != nil {
				return err
			}
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		out := bufio.NewWriterSize(w, 64<<10)
		if err := protobufList(out, res.GroupVersion().WithKind(res.Kind+"List"), listMeta, envelopes); err != nil {
			return err // nothing written yet
		}
		_ = out.Flush()
		return nil
	}
	return writeList(w, metav1.TypeMeta{Kind: res.Kind + "List", APIVersion: res.GroupVersion().String()}, listMeta, items, (*storedObject).listItemPieces)
}

// protobufList writes what the protobuf serializer makes of the typed list of kind, but puts
// in it each item's message from its shared envelope (an object's Protobuf) instead of
// encoding every object again: the envelope of the list kind around the list message, whose
// field 1 is the ListMeta and field 2 each item, as in every k8s.io/api list. It returns an
// error only before it writes anything; write errors (the client going away mid-body) are
// not ours to report.
func protobufList(out io.Writer, kind schema.GroupVersionKind, listMeta metav1.ListMeta, envelopes [][]byte) error {
	meta, err := listMeta.Marshal()
	if err != nil {
		return err
	}
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(meta))
	messages := make([][]byte, len(envelopes))
	for i, envelope := range envelopes {
		if messages[i], err = protobufMessage(envelope); err != nil {
			return err
		}
		size += protowire.SizeTag(2) + protowire.SizeBytes(len(messages[i]))
	}
	typeMeta, err := (&runtime.TypeMeta{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind}).Marshal()
	if err != nil {
		return err
	}
	head := append([]byte(nil), protobufMagic...)
	head = protowire.AppendTag(head, 1, protowire.BytesType) // runtime.Unknown's typeMeta
	head = protowire.AppendBytes(head, typeMeta)
	head = protowire.AppendTag(head, 2, protowire.BytesType) // its raw: the list message
	head = protowire.AppendVarint(head, uint64(size))
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendBytes(head, meta)
	_, _ = out.Write(head)
	for _, message := range messages {
		item := protowire.AppendTag(head[:0], 2, protowire.BytesType)
		item = protowire.AppendVarint(item, uint64(len(message)))
		_, _ = out.Write(item)
		_, _ = out.Write(message)
	}
	// runtime.Unknown's contentEncoding and contentType, empty, as the serializer writes them.
	_, _ = out.Write([]byte{0x1a, 0, 0x22, 0})
	return nil
}

// writeList writes what encoding a typed list would, but puts the items' stored or shared
// encodings (encode's, in pieces written one after the other) in the list envelope instead
// of encoding every object.
func writeList(w http.ResponseWriter, typeMeta metav1.TypeMeta, listMeta metav1.ListMeta, items []*storedObject, encode func(*storedObject) (pieces, error)) error {
	bodies := make([]pieces, len(items))
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
		for _, piece := range body {
			_, _ = out.Write(piece)
		}
	}
	_, _ = out.WriteString("]}\n")
	_ = out.Flush()
	return nil
}

// parseLimit reads a LIST's limit as kube-apiserver does: the parser's error as it is, and
// no limit for one below 1.
func parseLimit(v string) (int64, error) {
	n, err := parseInt(v)
	return max(n, 0), err
}

// parseInt reads an integer query parameter, "" as 0, refused in kube-apiserver's words.
func parseInt(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(err.Error())
	}
	return n, nil
}

// listOptions are a LIST's or WATCH's resourceVersion options, validated as kube-apiserver
// does (422 for a resourceVersionMatch it refuses).
func listOptions(q url.Values, watch bool) (metainternalversion.ListOptions, error) {
	opts := metainternalversion.ListOptions{
		Watch:                watch,
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		Continue:             q.Get("continue"),
	}
	if v := q.Get("sendInitialEvents"); v != "" {
		send := isTrue(v)
		opts.SendInitialEvents = &send
	}
	// A LIST does not use it, but kube-apiserver decodes it into every LIST's options.
	if v := q.Get("timeoutSeconds"); v != "" {
		timeout, err := parseInt(v)
		if err != nil {
			return opts, err
		}
		opts.TimeoutSeconds = &timeout
	}
	if errs := metainternalversionvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return opts, nil
}

// parseResourceVersion reads a GET's or WATCH's resourceVersion as kube-apiserver's watch
// cache does, "" and "0" as any. One that is not a number is refused with the storage's
// words; kube-apiserver passes that error on as a 500 (kubernetes#139485, a bug with a fix
// under review), miniapi as the 400 it is: the client sent it. A LIST checks it first, in
// words of its own (readList).
func parseResourceVersion(v string) (uint64, error) {
	rev, err := storage.APIObjectVersioner{}.ParseResourceVersion(v)
	if err != nil {
		return 0, apierrors.NewBadRequest(err.Error())
	}
	return rev, nil
}

// Kubernetes' messages for lists of history that is gone (k8s.io/apiserver's etcd3 store).
const (
	listExpired = "The resourceVersion for the provided list is too old."
	// A continue token of a compacted revision: the answer carries a token to go on at the
	// present, as kube-apiserver's does.
	continueExpired = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response " +
		"to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent " +
		"list - objects that were created, modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// readList reads the keys a LIST asks for and the revision they are at, with the key the
// page starts at, as kube-apiserver's storage does: a continue token's page at the token's
// revision; resourceVersionMatch=Exact, or a resourceVersion with a limit, at exactly that
// revision; NotOlderThan, or a resourceVersion alone, at one not older; none, the present.
func (s *Server) readList(ctx context.Context, prefix string, opts metainternalversion.ListOptions, limit int64) ([]store.KV, int64, string, error) {
	var rev uint64
	var startKey string
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact
	if opts.Continue != "" {
		key, continueRev, err := storage.DecodeContinue(opts.Continue, prefix)
		if err != nil {
			return nil, 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, 0, "", apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		startKey, exact = key, true
		if continueRev > 0 { // -1: go on at the present (the token of a compacted one)
			rev = uint64(continueRev)
		}
	} else {
		var err error
		if rev, err = (storage.APIObjectVersioner{}).ParseResourceVersion(opts.ResourceVersion); err != nil {
			// kube-apiserver's storage.ValidateListOptions, before its watch cache is asked.
			return nil, 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
		}
		exact = exact || (opts.ResourceVersionMatch == "" && limit > 0)
	}
	kvs, at, err := s.store.ListAt(ctx, prefix, int64(min(rev, math.MaxInt64)), exact) // beyond int64: never reached
	switch {
	case errors.Is(err, store.ErrCompacted) && opts.Continue != "":
		expired := apierrors.NewResourceExpired(continueExpired)
		expired.ErrStatus.ListMeta.Continue, _ = storage.EncodeContinue(startKey, prefix, -1) // startKey has the prefix
		return nil, 0, "", expired
	case errors.Is(err, store.ErrCompacted):
		return nil, 0, "", apierrors.NewResourceExpired(listExpired)
	case errors.Is(err, store.ErrFutureRevision):
		return nil, 0, "", tooLargeResourceVersion(rev, s.store.Revision())
	}
	return kvs, at, startKey, err
}

// tooLargeResourceVersion is kube-apiserver's answer to a read at a revision its watch cache
// has not reached within 3 s: 504 with the ResourceVersionTooLarge cause, retry in 1 s.
func tooLargeResourceVersion(rev uint64, current int64) error {
	return storage.NewTooLargeResourceVersionError(rev, uint64(max(current, 0)), 1)
}

// isTrue reads a boolean query parameter.
func isTrue(v string) bool { return v == "1" || strings.EqualFold(v, "true") }
