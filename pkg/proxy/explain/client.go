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

// get reads the object name of namespace into into.
func get(ctx context.Context, c rest.Interface, namespace, resource, name string, into runtime.Object) error {
	return c.Get().Namespace(namespace).Resource(resource).Name(name).Do(ctx).Into(into)
}

// list reads every namespace's objects of resource into into.
func list(ctx context.Context, c rest.Interface, resource string, into runtime.Object) error {
	return c.Get().Resource(resource).Do(ctx).Into(into)
}

func (c *Client) service(ctx context.Context, ns, name string) (*corev1.Service, error) {
	var s corev1.Service
	return &s, get(ctx, c.core, ns, "services", name, &s)
}

func (c *Client) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	return &p, get(ctx, c.core, ns, "pods", name, &p)
}

func (c *Client) pods(ctx context.Context) (*corev1.PodList, error) {
	var l corev1.PodList
	return &l, list(ctx, c.core, "pods", &l)
}

func (c *Client) namespaces(ctx context.Context) (*corev1.NamespaceList, error) {
	var l corev1.NamespaceList
	return &l, list(ctx, c.core, "namespaces", &l)
}

func (c *Client) nodes(ctx context.Context) (*corev1.NodeList, error) {
	var l corev1.NodeList
	return &l, list(ctx, c.core, "nodes", &l)
}

func (c *Client) networkPolicies(ctx context.Context) (*networkingv1.NetworkPolicyList, error) {
	var l networkingv1.NetworkPolicyList
	return &l, list(ctx, c.networking, "networkpolicies", &l)
}

func (c *Client) adminNetworkPolicies(ctx context.Context) (*anpv1alpha1.AdminNetworkPolicyList, error) {
	var l anpv1alpha1.AdminNetworkPolicyList
	return &l, list(ctx, c.admin, "adminnetworkpolicies", &l)
}

func (c *Client) baselineAdminNetworkPolicies(ctx context.Context) (*anpv1alpha1.BaselineAdminNetworkPolicyList, error) {
	var l anpv1alpha1.BaselineAdminNetworkPolicyList
	return &l, list(ctx, c.admin, "baselineadminnetworkpolicies", &l)
}
