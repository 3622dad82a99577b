// Package apiclient is miniproxy's client of the API server: REST clients for core/v1,
// discovery.k8s.io/v1 and events.k8s.io/v1 over a scheme of only those groups, and informers on the kinds the
// proxy reads. client-go's clientset would do the same, but its scheme registers every API
// group at start and its informer factory links a typed client and informer for each:
// about half of miniproxy's RSS at 10 Services (docs/performance.md), as kube-proxy's own
// dependencies are narrower than the clientset.
package apiclient

import (
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// scheme knows the kinds the clients decode: those of core/v1 (Services, Nodes, Pods...),
// discovery.k8s.io/v1, events.k8s.io/v1 and the meta kinds (Status, WatchEvent) every group answers with.
var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(discoveryv1.AddToScheme(scheme))
	utilruntime.Must(eventsv1.AddToScheme(scheme))
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}

// Client reaches core/v1, discovery.k8s.io/v1 and events.k8s.io/v1.
type Client struct {
	Core, Discovery, Events rest.Interface
}

// New makes the clients, sharing one HTTP client (one connection pool) as the clientset's
// do.
func New(cfg *rest.Config) (*Client, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	core, err := RESTClient(cfg, httpClient, corev1.SchemeGroupVersion, scheme)
	if err != nil {
		return nil, err
	}
	discovery, err := RESTClient(cfg, httpClient, discoveryv1.SchemeGroupVersion, scheme)
	if err != nil {
		return nil, err
	}
	events, err := RESTClient(cfg, httpClient, eventsv1.SchemeGroupVersion, scheme)
	if err != nil {
		return nil, err
	}
	return &Client{Core: core, Discovery: discovery, Events: events}, nil
}

// RESTClient is a client of group version gv decoding the kinds of scheme, over httpClient:
// what a generated typed client's setConfigDefaults does, with a scheme of the caller's. It
// asks for protobuf, JSON if the server has none, as the clientset does for built-in kinds
// (a list of 10 000 Services decodes with less CPU and garbage than from JSON), unless cfg
// names a content type: custom resources have no protobuf.
func RESTClient(cfg *rest.Config, httpClient *http.Client, gv schema.GroupVersion, scheme *runtime.Scheme) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	if c.ContentType == "" {
		c.ContentType = runtime.ContentTypeProtobuf
		c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api" // the legacy core group
	}
	c.GroupVersion = &gv
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientForConfigAndClient(c, httpClient)
}

// Informers makes the shared informers of the kinds the proxy reads, as client-go's
// informer factory: one per kind however often asked, each with the same list options and
// transform, indexed by namespace as the listers want.
type Informers struct {
	client    *Client
	tweak     func(*metav1.ListOptions)
	transform cache.TransformFunc
	informers map[string]cache.SharedIndexInformer // by resource
}

// NewInformers is the informers of c: tweak narrows every list and watch (nil: none),
// transform is applied to every object before it is stored (nil: none).
func NewInformers(c *Client, tweak func(*metav1.ListOptions), transform cache.TransformFunc) *Informers {
	return &Informers{client: c, tweak: tweak, transform: transform, informers: map[string]cache.SharedIndexInformer{}}
}

// Services is an informer on every namespace's Services, read by key: no index (at
// 10 000 Services a namespace index is ~0.5 MB; listers scan without it).
func (f *Informers) Services() cache.SharedIndexInformer {
	return f.informer(f.client.Core, "services", &corev1.Service{}, cache.Indexers{})
}

// EndpointSlices is an informer on every namespace's EndpointSlices, indexed by namespace
// (a Service's slices are looked for in its namespace).
func (f *Informers) EndpointSlices() cache.SharedIndexInformer {
	return f.informer(f.client.Discovery, "endpointslices", &discoveryv1.EndpointSlice{},
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// Nodes is an informer on the Nodes.
func (f *Informers) Nodes() cache.SharedIndexInformer {
	return f.informer(f.client.Core, "nodes", &corev1.Node{}, cache.Indexers{})
}

func (f *Informers) informer(c rest.Interface, resource string, obj runtime.Object, indexers cache.Indexers) cache.SharedIndexInformer {
	if inf, ok := f.informers[resource]; ok {
		return inf
	}
	tweak := func(o *metav1.ListOptions) {
		if f.tweak != nil {
			f.tweak(o)
		}
	}
	lw := cache.NewFilteredListWatchFromClient(c, resource, metav1.NamespaceAll, tweak)
	inf := cache.NewSharedIndexInformer(lw, obj, time.Duration(0), indexers)
	if f.transform != nil {
		utilruntime.Must(inf.SetTransform(f.transform)) // cannot fail before Run
	}
	f.informers[resource] = inf
	return inf
}

// Start runs every informer made so far until stop closes.
func (f *Informers) Start(stop <-chan struct{}) {
	for _, inf := range f.informers {
		go inf.Run(stop)
	}
}
