package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
)

// bookmarkInterval is how often an idle watch that allows bookmarks is told the current
// revision, so a client resuming later does not fall off the retained history.
const bookmarkInterval = 30 * time.Second

// initialEventsEnd marks the bookmark that ends the initial events of sendInitialEvents.
const initialEventsEnd = "k8s.io/initial-events-end"

type watchParams struct {
	fromRevision      int64
	initialEvents     bool
	bookmarks         bool
	initialEventsDone bool // send the initial-events-end bookmark
	timeout           time.Duration
}

func parseWatchParams(r *http.Request) (watchParams, error) {
	q := r.URL.Query()
	p := watchParams{bookmarks: isTrue(q.Get("allowWatchBookmarks"))}
	opts, err := listOptions(q, true)
	if err != nil {
		return p, err
	}
	rv := q.Get("resourceVersion")
	n, err := parseResourceVersion(rv)
	if err != nil {
		return p, err
	}
	p.fromRevision = int64(min(n, math.MaxInt64)) // beyond int64: never reached
	// Without a resourceVersion (or "0") a watch starts with the current state as ADDED events.
	p.initialEvents = rv == "" || rv == "0"
	if v := q.Get("sendInitialEvents"); v != "" {
		p.initialEvents = isTrue(v)
		p.initialEventsDone = p.initialEvents && p.bookmarks
	}
	if opts.TimeoutSeconds != nil {
		p.timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return p, nil
}

// watchStream writes watch events as newline-delimited JSON, or for a protobuf client as
// length-prefixed protobuf metav1.WatchEvents. Events are flushed by the caller once no more
// are waiting, so a burst goes out in few TLS records.
type watchStream struct {
	w      http.ResponseWriter
	r      *http.Request
	res    *registry.Resource
	rep    representation
	frame  []byte    // reused for each event
	frames io.Writer // writes protobuf frames to w
}

func newWatchStream(w http.ResponseWriter, r *http.Request, res *registry.Resource, rep representation) *watchStream {
	ws := &watchStream{w: w, r: r, res: res, rep: rep}
	if rep.protobuf {
		ws.frames = protobuf.LengthDelimitedFramer.NewFrameWriter(w)
	}
	return ws
}

func (ws *watchStream) contentType() string {
	if ws.rep.protobuf {
		return runtime.ContentTypeProtobuf + ";stream=watch"
	}
	return "application/json"
}

// payload is what the event of a stored object carries: the object's shared encoding or
// shared PartialObjectMetadata, or for kubectl a Table of it. A PartialObjectMetadataList
// cannot be an event: Kubernetes sends the object as it is. An error here is the object's:
// it ends the stream.
func (ws *watchStream) payload(stored *storedObject) ([]byte, error) {
	switch ws.rep.as {
	case asPartialMetadata:
		return stored.PartialMetadata(ws.rep.version)
	case asTable:
		obj, err := stored.Object()
		if err != nil {
			return nil, err
		}
		tbl, err := buildTable(ws.r, ws.res, []runtime.Object{obj}, metav1.ListMeta{ResourceVersion: mustMeta(obj).GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		return json.Marshal(tbl)
	}
	if ws.rep.protobuf {
		return stored.Protobuf()
	}
	return stored.JSON()
}

// send writes the event of an object that is not stored: a bookmark or a Status.
func (ws *watchStream) send(t watch.EventType, obj runtime.Object) error {
	if ws.rep.protobuf {
		raw, err := encodeProtobuf(obj)
		if err != nil {
			return err
		}
		return ws.write(t, raw)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return ws.write(t, raw)
}

// write frames raw as a metav1.WatchEvent: {"type":T,"object":RAW}, or its protobuf.
func (ws *watchStream) write(t watch.EventType, raw []byte) error {
	if ws.rep.protobuf {
		ev := metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}}
		ws.frame = slices.Grow(ws.frame[:0], ev.Size())[:ev.Size()]
		if _, err := ev.MarshalToSizedBuffer(ws.frame); err != nil {
			return err
		}
		_, err := ws.frames.Write(ws.frame)
		return err
	}
	ws.frame = append(ws.frame[:0], `{"type":"`...)
	ws.frame = append(ws.frame, t...)
	ws.frame = append(ws.frame, `","object":`...)
	ws.frame = append(ws.frame, raw...)
	ws.frame = append(ws.frame, "}\n"...)
	_, err := ws.w.Write(ws.frame)
	return err
}

// sendError ends a stream with an ERROR event carrying the Status of err.
func (ws *watchStream) sendError(err apierrors.APIStatus) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"} // clients decode the event by its kind
	if ws.send(watch.Error, &st) == nil {
		ws.flush()
	}
}

func (ws *watchStream) flush() {
	if f, ok := ws.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (ws *watchStream) bookmark(rev int64, annotations map[string]string) error {
	obj, err := ws.res.New()
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(ws.res.GVK())
	m := mustMeta(obj)
	generic.SetResourceVersion(obj, rev)
	m.SetAnnotations(annotations)
	if ws.rep.as == asPartialMetadata { // a metadata-only client could not decode the object
		obj = partialMetadata(obj, ws.rep)
	}
	if err := ws.send(watch.Bookmark, obj); err != nil {
		return err
	}
	ws.flush()
	return nil
}

// serveWatch streams the changes to res after the request's resourceVersion. Once the
// stream has begun, errors end it with an ERROR event, on which client-go relists: an event
// that cannot be sent is never skipped, which would leave the client's cache silently wrong.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo, rep representation) error {
	sel, err := parseSelectors(r, res)
	if err != nil {
		return err
	}
	params, err := parseWatchParams(r)
	if err != nil {
		return err
	}
	if info.Name != "" { // a watch on one object is a watch with a metadata.name selector
		sel.fields = andName(sel, info.Name)
	}
	ctx := r.Context()
	if params.timeout != 0 { // a negative one has passed already, as kube-apiserver's timer has
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, params.timeout)
		defer cancel()
	}
	prefix := generic.ListPrefix(res, info.Namespace)

	var initial []store.KV
	from := params.fromRevision
	if params.initialEvents {
		// Not older than the resourceVersion: the store may wait for it (kube's watch-list).
		initial, from, err = s.store.ListAt(ctx, prefix, params.fromRevision, false)
		if err != nil && !errors.Is(err, store.ErrFutureRevision) {
			return err
		}
	}
	var events <-chan store.Event
	if err == nil {
		events, err = s.store.Watch(ctx, prefix, from)
	}
	ws := newWatchStream(w, r, res, rep)
	w.Header().Set("Content-Type", ws.contentType())
	w.WriteHeader(http.StatusOK)
	var tooLarge apierrors.APIStatus
	if errors.Is(err, store.ErrFutureRevision) && errors.As(tooLargeResourceVersion(uint64(params.fromRevision), s.store.Revision()), &tooLarge) {
		// As kube-apiserver's watch cache ends such a watch: an ERROR event, on which
		// client-go's reflector lists again.
		ws.sendError(tooLarge)
		return nil
	}
	if errors.Is(err, store.ErrCompacted) {
		// client-go's reflector relists when it gets this 410 Expired error event, which
		// names the oldest revision a watch can resume from as kube's watch cache does.
		oldest := s.store.Revision() // etcd's watch does not say
		if compacted, ok := errors.AsType[*store.WatchCompactedError](err); ok {
			oldest = compacted.Oldest
		}
		ws.sendError(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, oldest)))
		return nil
	}
	if err != nil {
		ws.sendError(apierrors.NewInternalError(err))
		return nil
	}
	s.metrics.watchers.Inc()
	defer s.metrics.watchers.Dec()
	if rep.protobuf && rep.as == "" {
		defer s.encodings.watching(res)()
	}

	for _, kv := range initial {
		obj := s.encodings.object(res, kv.Value, kv.Revision)
		matches, err := sel.matchesStored(res, obj)
		var raw []byte
		if err == nil && matches {
			raw, err = ws.payload(obj)
		}
		if err != nil {
			s.endWatch(ws, kv.Key, err)
			return nil
		}
		if matches && ws.write(watch.Added, raw) != nil {
			return nil
		}
	}
	ws.flush()
	if params.initialEventsDone && ws.bookmark(from, map[string]string{initialEventsEnd: "true"}) != nil {
		return nil
	}
	s.streamEvents(ctx, ws, sel, events, params.bookmarks, from)
	return nil
}

// endWatch ends a stream on an object it cannot send, with an ERROR event: client-go's
// reflector then lists again, and its cache cannot silently miss the object.
func (s *Server) endWatch(ws *watchStream, key string, err error) {
	s.log.Error("watch: ending a watch on an object that cannot be sent; its client relists", "key", key, "err", err)
	ws.sendError(apierrors.NewInternalError(fmt.Errorf("unable to send the object %s of the watch: %w", key, err)))
}

func (s *Server) streamEvents(ctx context.Context, ws *watchStream, sel selectors, events <-chan store.Event, bookmarks bool, last int64) {
	ticker := time.NewTicker(bookmarkInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ws.res.Gone:
			return // the resource is no longer served
		case <-ticker.C:
			if bookmarks && ws.bookmark(last, nil) != nil {
				return
			}
		case ev, ok := <-events:
			if !ok {
				return // the store dropped a slow watcher: the client resumes from its last revision
			}
			last = ev.Revision
			t, obj, err := s.translate(ws.res, sel, ev)
			var raw []byte
			if err == nil && obj != nil {
				raw, err = ws.payload(obj)
			}
			switch {
			case err != nil:
				s.endWatch(ws, ev.Key, err)
				return
			case obj != nil && ws.write(t, raw) != nil:
				return
			}
			if len(events) == 0 {
				ws.flush()
			}
		}
	}
}

// translate turns a store event into the watch event a client with these selectors sees:
// an object entering the selection is ADDED, one leaving it is DELETED, as it was when it
// last matched but at the event's revision (kube's cacher sends the previous object so).
// Objects are shared through the events' memos: decoded, when a selector needs it, once for
// all watchers.
func (s *Server) translate(res *registry.Resource, sel selectors, ev store.Event) (watch.EventType, *storedObject, error) {
	obj := s.encodings.object(res, ev.Value, ev.Revision)
	matches, err := sel.matchesStored(res, obj)
	if err != nil {
		return "", nil, err
	}
	switch ev.Type {
	case store.Added:
		if matches {
			return watch.Added, obj, nil
		}
	case store.Deleted:
		if matches {
			return watch.Deleted, obj, nil
		}
	case store.Modified:
		wasMatching, prev := true, obj
		if ev.PrevValue != nil {
			prev = s.encodings.object(res, ev.PrevValue, ev.Revision)
			if wasMatching, err = sel.matchesStored(res, prev); err != nil {
				return "", nil, err
			}
		}
		switch {
		case matches && wasMatching:
			return watch.Modified, obj, nil
		case matches:
			return watch.Added, obj, nil
		case wasMatching:
			return watch.Deleted, prev, nil
		}
	}
	return "", nil, nil
}
