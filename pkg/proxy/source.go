package proxy

import (
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// Source is where a proxy reads Services and EndpointSlices, as records.
type Source interface {
	Services() ([]*ServiceRecord, error)
	Service(namespace, name string) (*ServiceRecord, error) // nil, nil: none
	Slices() ([]*SliceRecord, error)
	Slice(namespace, name string) (*SliceRecord, error) // nil, nil: none
	// ServiceSlices are the slices labelled for Service namespace/service.
	ServiceSlices(namespace, service string) ([]*SliceRecord, error)
}

// Records reads informers whose transform is Compact (miniproxy's): their indexers hold
// records, the slices' indexed by namespace.
func Records(services, slices cache.Indexer) Source { return records{services, slices} }

type records struct{ services, slices cache.Indexer }

func (r records) Services() ([]*ServiceRecord, error) { return all[ServiceRecord](r.services.List()) }
func (r records) Slices() ([]*SliceRecord, error)     { return all[SliceRecord](r.slices.List()) }

func (r records) Service(namespace, name string) (*ServiceRecord, error) {
	return byKey[ServiceRecord](r.services, namespace, name)
}

func (r records) Slice(namespace, name string) (*SliceRecord, error) {
	return byKey[SliceRecord](r.slices, namespace, name)
}

func (r records) ServiceSlices(namespace, service string) ([]*SliceRecord, error) {
	objs, err := r.slices.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	list, err := all[SliceRecord](objs)
	var out []*SliceRecord
	for _, s := range list {
		if s.Service == service {
			out = append(out, s)
		}
	}
	return out, err
}

func all[T any](objs []any) ([]*T, error) {
	out := make([]*T, 0, len(objs))
	for _, o := range objs {
		r, ok := o.(*T)
		if !ok {
			return nil, fmt.Errorf("informer cache holds a %T, not a %T: is its transform proxy.Compact?", o, r)
		}
		out = append(out, r)
	}
	return out, nil
}

func byKey[T any](idx cache.Indexer, namespace, name string) (*T, error) {
	o, ok, err := idx.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	list, err := all[T]([]any{o})
	if err != nil {
		return nil, err
	}
	return list[0], nil
}

// Listers reads API objects through client-go listers, making records as it reads (tests
// and benchmarks keep whole objects; miniproxy reads Records).
func Listers(services corelisters.ServiceLister, slices discoverylisters.EndpointSliceLister) Source {
	return listers{services, slices}
}

type listers struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

func (l listers) Services() ([]*ServiceRecord, error) {
	list, err := l.services.List(labels.Everything())
	out := make([]*ServiceRecord, len(list))
	for i, s := range list {
		out[i] = ServiceRecordOf(s)
	}
	return out, err
}

func (l listers) Slices() ([]*SliceRecord, error) {
	list, err := l.slices.List(labels.Everything())
	return sliceRecords(list), err
}

func (l listers) Service(namespace, name string) (*ServiceRecord, error) {
	s, err := l.services.Services(namespace).Get(name)
	return recordOf(s, err, ServiceRecordOf)
}

func (l listers) Slice(namespace, name string) (*SliceRecord, error) {
	s, err := l.slices.EndpointSlices(namespace).Get(name)
	return recordOf(s, err, SliceRecordOf)
}

// recordOf is the record of what a lister's Get found; nil, and no error, when it found
// nothing.
func recordOf[O, R any](obj O, err error, record func(O) *R) (*R, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return record(obj), nil
}

func (l listers) ServiceSlices(namespace, service string) ([]*SliceRecord, error) {
	list, err := l.slices.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: service}))
	return sliceRecords(list), err
}

func sliceRecords(list []*discoveryv1.EndpointSlice) []*SliceRecord {
	out := make([]*SliceRecord, len(list))
	for i, s := range list {
		out[i] = SliceRecordOf(s)
	}
	return out
}
