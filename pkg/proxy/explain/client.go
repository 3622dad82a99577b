package explain

import (
	"context"

	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// Client reads what explain needs (Services, pods, namespaces, NetworkPolicies and the
// admin policies) through REST clients of those groups only: explain is part of miniproxy's
// binary, and client-go's clientset would bring every API group's scheme into it. The
// scheme is built when explain runs, not when the daemon starts.
type Client struct {
	core, networking, admin rest.Interface
}

// NewClient makes explain's clients, sharing one HTTP client.
func NewClient(cfg *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme, anpv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	jsonOnly := rest.CopyConfig(cfg) // the admin policies are custom resources: no protobuf
	jsonOnly.ContentType = runtime.ContentTypeJSON
	c := &Client{}
	for _, g := range []struct {
		client *rest.Interface
		cfg    *rest.Config
		gv     schema.GroupVersion
	}{{&c.core, cfg, corev1.SchemeGroupVersion}, {&c.networking, cfg, networkingv1.SchemeGroupVersion}, {&c.admin, jsonOnly, anpv1alpha1.SchemeGroupVersion}} {
		rc, err := apiclient.RESTClient(g.cfg, httpClient, g.gv, scheme)
		if err != nil {
			return nil, err
		}
		*g.client = rc
	}
	return c, nil
}

// object is a pointer to an API type T, which the REST client decodes into.
type object[T any] interface {
	*T
	runtime.Object
}

// get reads the object name of namespace.
func get[T any, PT object[T]](ctx context.Context, c rest.Interface, namespace, resource, name string) (PT, error) {
	into := PT(new(T))
	return into, c.Get().Namespace(namespace).Resource(resource).Name(name).Do(ctx).Into(into)
}

// list reads every namespace's objects of resource.
func list[T any, PT object[T]](ctx context.Context, c rest.Interface, resource string) (PT, error) {
	into := PT(new(T))
	return into, c.Get().Resource(resource).Do(ctx).Into(into)
}

func (c *Client) service(ctx context.Context, ns, name string) (*corev1.Service, error) {
	return get[corev1.Service](ctx, c.core, ns, "services", name)
}

func (c *Client) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return get[corev1.Pod](ctx, c.core, ns, "pods", name)
}

func (c *Client) pods(ctx context.Context) (*corev1.PodList, error) {
	return list[corev1.PodList](ctx, c.core, "pods")
}

func (c *Client) namespaces(ctx context.Context) (*corev1.NamespaceList, error) {
	return list[corev1.NamespaceList](ctx, c.core, "namespaces")
}

func (c *Client) nodes(ctx context.Context) (*corev1.NodeList, error) {
	return list[corev1.NodeList](ctx, c.core, "nodes")
}

func (c *Client) networkPolicies(ctx context.Context) (*networkingv1.NetworkPolicyList, error) {
	return list[networkingv1.NetworkPolicyList](ctx, c.networking, "networkpolicies")
}

func (c *Client) adminNetworkPolicies(ctx context.Context) (*anpv1alpha1.AdminNetworkPolicyList, error) {
	return list[anpv1alpha1.AdminNetworkPolicyList](ctx, c.admin, "adminnetworkpolicies")
}

func (c *Client) baselineAdminNetworkPolicies(ctx context.Context) (*anpv1alpha1.BaselineAdminNetworkPolicyList, error) {
	return list[anpv1alpha1.BaselineAdminNetworkPolicyList](ctx, c.admin, "baselineadminnetworkpolicies")
}
