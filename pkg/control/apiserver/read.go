package apiserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	obj, _, err := s.load(r, res, info.Namespace, info.Name)
	if err != nil {
		writeError(w, err)
		return
	}
	s.respond(w, r, res, http.StatusOK, obj)
}

// load reads one object and the revision of its key.
func (s *Server) load(r *http.Request, res *registry.Resource, ns, name string) (runtime.Object, store.KV, error) {
	kv, err := s.store.Get(r.Context(), objectKey(res, ns, name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, kv, apierrors.NewNotFound(res.GroupResource(), name)
	}
	if err != nil {
		return nil, kv, err
	}
	obj, err := decodeStored(res, kv.Value, kv.Revision)
	return obj, kv, err
}

// continueToken is the opaque ?continue= of a paginated list: where the next page starts.
type continueToken struct {
	ResourceVersion int64  `json:"rv"`
	StartAfter      string `json:"start"`
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	sel, err := parseSelectors(r, res)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		writeError(w, err)
		return
	}
	var startAfter string
	if c := q.Get("continue"); c != "" {
		tok, err := decodeContinue(c)
		if err != nil {
			writeError(w, err)
			return
		}
		startAfter = tok.StartAfter
	}
	kvs, rev, err := s.store.List(r.Context(), listPrefix(res, info.Namespace))
	if err != nil {
		writeError(w, err)
		return
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	var items []runtime.Object
	listMeta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(rev, 10)}
	for i, kv := range kvs {
		if kv.Key <= startAfter {
			continue
		}
		obj, err := decodeStored(res, kv.Value, kv.Revision)
		if err != nil {
			writeError(w, err)
			return
		}
		if !sel.matches(res, obj) {
			continue
		}
		if limit > 0 && int64(len(items)) == limit {
			listMeta.Continue = encodeContinue(continueToken{ResourceVersion: rev, StartAfter: kvs[i-1].Key})
			break
		}
		items = append(items, obj)
	}
	if wantsTable(r) {
		table, err := buildTable(r, res, items, listMeta)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, table)
		return
	}
	list, err := res.NewList()
	if err != nil {
		writeError(w, err)
		return
	}
	if err := meta.SetList(list, items); err != nil {
		writeError(w, err)
		return
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(listMeta.ResourceVersion)
	lm.SetContinue(listMeta.Continue)
	list.GetObjectKind().SetGroupVersionKind(res.GroupVersion().WithKind(res.Kind + "List"))
	writeJSON(w, http.StatusOK, list)
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
