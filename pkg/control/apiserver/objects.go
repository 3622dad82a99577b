package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"k8s.io/apimachinery/pkg/runtime"
)

var (
	mustMeta   = generic.MustMeta
	objectMeta = generic.ObjectMeta
)

// storedObject is one version of a stored object as readers send it: the value and the
// encodings derived from it, which every GET, LIST and WATCH reading that version shares
// (see encodings). Its JSON is the stored JSON with the resourceVersion put in, with no
// decoding (but where the resource converts or its rules fix up what is read); it is
// decoded, once, only for what needs the typed object (selectors, tables).
// What it returns is shared: never modify it.
type storedObject struct {
	res   *registry.Resource
	value []byte
	rev   int64
	*derived
}

// derived holds what readers derive from one version of a value. It does not hold the value:
// its lifetime is the value's (see encodings).
type derived struct {
	// The object and its JSON are kept once made; a failure is not (a conversion webhook
	// may be down for a moment), the next reader tries again.
	json kept[jsonForm]
	obj  kept[runtime.Object]

	protobufOnce sync.Once
	protobuf     []byte
	protobufErr  error

	partialOnce sync.Once
	partial     []byte // the PartialObjectMetadata of meta.k8s.io/v1
	metadata    []byte // the metadata in it, for other versions
	partialErr  error
}

// encodings shares what is derived from one version of a stored value among all its
// readers. The watch cache hands every reader of a version the very same bytes, so the
// version is known by the address of its bytes: a map with weak keys, each entry removed
// once its bytes are collected (the cache no longer holds that version and no reader
// does). Values read from the engine itself are fresh bytes, derived for their reader only.
type encodings struct {
	m sync.Map // encodingKey -> *derived
	// protobufWatches counts each resource's open watches of whole objects in protobuf.
	protobufWatches sync.Map // *registry.Resource -> *atomic.Int32
}

type encodingKey struct {
	value weak.Pointer[byte]
	size  int
	rev   int64
	res   *registry.Resource
}

// object returns the storedObject of a value's version, sharing what is derived from it.
func (e *encodings) object(res *registry.Resource, value []byte, rev int64) *storedObject {
	o := &storedObject{res: res, value: value, rev: rev}
	if len(value) == 0 {
		o.derived = new(derived)
		return o
	}
	p := unsafe.SliceData(value)
	key := encodingKey{value: weak.Make(p), size: len(value), rev: rev, res: res}
	if d, ok := e.m.Load(key); ok {
		o.derived = d.(*derived)
		return o
	}
	d, loaded := e.m.LoadOrStore(key, new(derived))
	if !loaded {
		goruntime.AddCleanup(p, func(k encodingKey) { e.m.Delete(k) }, key)
	}
	o.derived = d.(*derived)
	return o
}

// watching counts a protobuf watch of res until the returned func is called.
func (e *encodings) watching(res *registry.Resource) (done func()) {
	n, _ := e.protobufWatches.LoadOrStore(res, new(atomic.Int32))
	n.(*atomic.Int32).Add(1)
	return func() { n.(*atomic.Int32).Add(-1) }
}

// written is told of each object the server's writes store (generic.Config.Stored). While
// a protobuf watch of its resource is open, the write's event will go out as protobuf:
// encoding the object the writer holds costs a fraction of decoding the stored JSON to
// encode it, which was most of a watch event's cost, and a protobuf response to the write
// sends the same bytes (see sharedWrite). The object is not kept. It is what the stored
// JSON decodes to, but for what JSON cannot hold and protobuf can: a MicroTime's
// nanoseconds (a watch then carries them as kube-apiserver's protobuf storage does).
func (e *encodings) written(ctx context.Context, res *registry.Resource, value []byte, rev int64, obj runtime.Object) {
	// With a conversion, the object is not of the stored version its event is encoded from.
	if res.Conversion != nil || len(value) == 0 || !e.protobufWatched(res) {
		return
	}
	o := e.object(res, value, rev)
	o.protobufOnce.Do(func() { o.protobuf, o.protobufErr = encodeProtobuf(obj) })
	if share, ok := ctx.Value(sharedWriteKey{}).(*sharedWrite); ok {
		share.stored = o
	}
}

func (e *encodings) protobufWatched(res *registry.Resource) bool {
	n, ok := e.protobufWatches.Load(res)
	return ok && n.(*atomic.Int32).Load() > 0
}

// sharedWrite carries out of a write the stored version it wrote, for a protobuf response
// to send the encoding that version's watch event shares.
type sharedWrite struct{ stored *storedObject }

type sharedWriteKey struct{}

// withSharedWrite readies r to take its write's stored version, when its protobuf response
// could share it.
func (e *encodings) withSharedWrite(r *http.Request, res *registry.Resource, rep representation) *http.Request {
	if !rep.protobuf || rep.as != "" || !e.protobufWatched(res) {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), sharedWriteKey{}, new(sharedWrite)))
}

// sharedProtobuf is the shared protobuf of obj, when it is the version r wrote.
func sharedProtobuf(r *http.Request, res *registry.Resource, obj runtime.Object) ([]byte, bool) {
	share, ok := r.Context().Value(sharedWriteKey{}).(*sharedWrite)
	if !ok || share.stored == nil || share.stored.res != res ||
		mustMeta(obj).GetResourceVersion() != strconv.FormatInt(share.stored.rev, 10) {
		return nil, false
	}
	raw, err := share.stored.Protobuf()
	return raw, err == nil
}

// Object is the decoded object, with its resourceVersion.
func (o *storedObject) Object() (runtime.Object, error) {
	return o.obj.get(func() (runtime.Object, error) { return generic.Decode(o.res, o.value, o.rev) })
}

// JSON is the object as a response or a watch event carries it: a copy of the stored
// value's bytes with its resourceVersion put in (see jsonPieces), or the JSON the object
// encodes to where it is converted or fixed up as it is read, which is kept.
func (o *storedObject) JSON() ([]byte, error) {
	p, err := o.jsonPieces()
	if err != nil || p[1] == nil {
		return p[0], err
	}
	return bytes.Join(p[:], nil), nil
}

// pieces are a JSON text in pieces written one after the other.
type pieces [4][]byte

// jsonPieces are the object's JSON in pieces: the stored value up to where its
// resourceVersion goes, that field, and the rest of the value, so that a LIST copies no
// stored value and nothing but offsets are kept per version; or, where the resource
// converts the object or its rules fix it up as it is read, the whole JSON, kept.
func (o *storedObject) jsonPieces() (pieces, error) {
	f, err := o.jsonForm()
	switch {
	case err != nil:
		return pieces{}, err
	case f.whole != nil:
		return pieces{f.whole}, nil
	}
	return pieces{o.value[:f.at], resourceVersionField(o.value, f.at, o.rev), o.value[f.at:]}, nil
}

// listItemPieces are the object's JSON as an item of a LIST: as kube-apiserver lists a
// built-in kind, its items carry no kind and apiVersion (the list's do); a custom
// resource's keep theirs.
func (o *storedObject) listItemPieces() (pieces, error) {
	f, err := o.jsonForm()
	switch {
	case err != nil:
		return pieces{}, err
	case f.item == 0:
		return o.jsonPieces()
	case f.whole != nil:
		return pieces{[]byte("{"), f.whole[f.item:]}, nil
	}
	return pieces{[]byte("{"), o.value[f.item:f.at], resourceVersionField(o.value, f.at, o.rev), o.value[f.at:]}, nil
}

func (o *storedObject) jsonForm() (jsonForm, error) {
	return o.json.get(func() (jsonForm, error) {
		custom := registry.IsCustom(o.res.GVK())
		if o.res.Conversion == nil && o.res.Rules.Decoded == nil {
			if l, ok := layoutOf(o.value, custom); ok {
				return jsonForm{at: l.resourceVersion, item: l.item}, nil
			}
		}
		obj, err := o.Object()
		if err != nil {
			return jsonForm{}, err
		}
		whole, err := json.Marshal(obj)
		if err != nil || custom { // a custom resource's item keeps its kind: nothing to find
			return jsonForm{whole: whole}, err
		}
		l, _ := layoutOf(whole, false)
		return jsonForm{whole: whole, item: l.item}, nil
	})
}

// jsonForm is how a version's JSON is made: whole, or the stored value with the
// resourceVersion put in at offset at; as a LIST's item, from offset item on after an
// opening brace (0: as it is).
type jsonForm struct {
	whole    []byte
	at, item int
}

// kept is a value made once by its first reader that succeeds: a failure is returned to
// its reader only. Readers wait for the one making it; once made, reading it costs what
// sync.Once does.
type kept[T any] struct {
	done atomic.Bool
	mu   sync.Mutex
	v    T
}

func (k *kept[T]) get(build func() (T, error)) (T, error) {
	if k.done.Load() {
		return k.v, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.done.Load() {
		v, err := build()
		if err != nil {
			return v, err
		}
		k.v = v
		k.done.Store(true)
	}
	return k.v, nil
}

// Protobuf is the object as Kubernetes protobuf, as a watch event carries it to client-go.
// The object it is encoded from is not kept (unless Object was called): what the memo holds
// is then bytes, which the garbage collector does not scan.
func (o *storedObject) Protobuf() ([]byte, error) {
	o.protobufOnce.Do(func() {
		obj, err := generic.Decode(o.res, o.value, o.rev)
		if err != nil {
			o.protobufErr = err
			return
		}
		o.protobuf, o.protobufErr = encodeProtobuf(obj)
	})
	return o.protobuf, o.protobufErr
}

// PartialMetadata is the object as a PartialObjectMetadata of meta.k8s.io version (v1 or
// v1beta1), what metadata-only clients such as the garbage collector read: the stored
// metadata with the resourceVersion put in, with no decoding of the rest. The v1 form is
// shared like JSON's.
func (o *storedObject) PartialMetadata(version string) ([]byte, error) {
	o.partialOnce.Do(func() {
		md, ok := storedMetadata(o.value, o.rev)
		if !ok {
			obj, err := o.Object()
			if err == nil {
				md, err = json.Marshal(objectMeta(obj))
			}
			if err != nil {
				o.partialErr = err
				return
			}
		}
		o.partial = partialJSON("v1", md)
		o.metadata = o.partial[len(o.partial)-1-len(md) : len(o.partial)-1] // one copy held
	})
	if o.partialErr != nil || version == "v1" {
		return o.partial, o.partialErr
	}
	return partialJSON(version, o.metadata), nil
}

// partialJSON is the PartialObjectMetadata of meta.k8s.io version with this metadata JSON,
// as encoding the typed object would give it.
func partialJSON(version string, metadata []byte) []byte {
	const head, mid = `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/`, `","metadata":`
	out := make([]byte, 0, len(head)+len(version)+len(mid)+len(metadata)+1)
	out = append(append(append(append(out, head...), version...), mid...), metadata...)
	return append(out, '}')
}

// storedMetadata is the metadata object of a stored object's JSON with the resourceVersion
// put in where ObjectMeta's encoding puts it. Only the fields up to metadata (kind
// and apiVersion, as encodeForStore writes them) are read; what follows is not. ok is false
// when value is not a JSON object with a metadata object.
func storedMetadata(value []byte, rev int64) (md []byte, ok bool) {
	span, ok := metadataSpanOf(value)
	if !ok {
		return nil, false
	}
	md = value[span.start:span.end]
	at := resourceVersionIn(md)
	return bytes.Join([][]byte{md[:at], resourceVersionField(md, at, rev), md[at:]}, nil), true
}

// jsonLayout is where a stored object's JSON takes its resourceVersion, and where its body
// as a LIST's item starts (0 when it keeps its kind and apiVersion).
type jsonLayout struct{ resourceVersion, item int }

// layoutOf lays out a stored object's JSON (which never holds its resourceVersion): the
// resourceVersion goes where encoding the object would put it, after the metadata fields
// ObjectMeta declares before it. A built-in kind's item drops kind and apiVersion when they
// are all that precede its metadata; a custom resource's (custom) keeps them, as in kube.
// ok is false when value is not a JSON object with a metadata object.
func layoutOf(value []byte, custom bool) (l jsonLayout, ok bool) {
	if !json.Valid(value) {
		return l, false
	}
	span, ok := metadataSpanOf(value)
	if !ok {
		return l, false
	}
	if span.afterTypeMeta && !custom {
		l.item = span.key
	}
	l.resourceVersion = span.start + resourceVersionIn(value[span.start:span.end])
	return l, true
}

// beforeResourceVersion tells the metadata fields ObjectMeta encodes before its
// resourceVersion.
func beforeResourceVersion(key string) bool {
	switch key {
	case "name", "generateName", "namespace", "selfLink", "uid":
		return true
	}
	return false
}

// resourceVersionIn is where the resourceVersion goes in md, a valid metadata object: after
// the fields that come before it, ahead of the first other.
func resourceVersionIn(md []byte) int {
	dec := json.NewDecoder(bytes.NewReader(md))
	if _, err := dec.Token(); err != nil {
		return 1
	}
	at := int(dec.InputOffset())
	for dec.More() {
		key, err := dec.Token()
		if k, _ := key.(string); err != nil || !beforeResourceVersion(k) {
			break
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
		at = int(dec.InputOffset())
	}
	return at
}

// metadataSpan is where a JSON object's top-level "metadata" object is: value[start:end],
// its key at key; afterTypeMeta when only kind and apiVersion come before it.
type metadataSpan struct {
	key, start, end int
	afterTypeMeta   bool
}

// metadataSpanOf finds the top-level "metadata" object of a JSON object. The fields after
// it are not read.
func metadataSpanOf(value []byte) (span metadataSpan, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return span, false
	}
	span.afterTypeMeta = true
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return span, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return span, false
		}
		if key == "metadata" {
			span.end = int(dec.InputOffset())
			span.start = span.end - len(raw)
			// (a key written with escapes is not found: the item then keeps its type)
			span.key = bytes.LastIndex(value[:span.start], []byte(`"metadata"`))
			span.afterTypeMeta = span.afterTypeMeta && span.key > 0
			return span, len(raw) >= 2 && raw[0] == '{'
		}
		span.afterTypeMeta = span.afterTypeMeta && (key == "kind" || key == "apiVersion")
	}
	return span, false
}

// resourceVersionField is the resourceVersion field that goes into b at at, with a comma
// between it and the field before or after it.
func resourceVersionField(b []byte, at int, rev int64) []byte {
	field := `"resourceVersion":"` + strconv.FormatInt(rev, 10) + `"`
	if head := bytes.TrimSpace(b[:at]); len(head) > 0 && head[len(head)-1] != '{' {
		return []byte("," + field)
	}
	if rest := bytes.TrimSpace(b[at:]); len(rest) > 0 && rest[0] != '}' {
		field += ","
	}
	return []byte(field)
}
