// Package noderestriction is Kubernetes' NodeRestriction admission plugin, the half of a
// node's confinement the Node authorizer cannot decide from the request alone: a node
// (user system:node:<name> in system:nodes) creates only mirror pods bound to itself and
// owned by its Node, referring to no service account, secret, configmap or claim; deletes
// and evicts only pods bound to itself; updates the status of those pods only, without
// touching their labels; creates, updates and deletes only its own Node, without changing
// its taints or setting labels outside the kubelet's set (node-restriction.kubernetes.io/
// labels never); creates, updates and deletes only its own Lease in kube-node-lease.
package noderestriction

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	kubeletapis "k8s.io/kubelet/pkg/apis"
)

const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
	mirrorPod      = "kubernetes.io/config.mirror"
)

// Plugin looks up the pods and Nodes its checks need through client (evictions and
// mirror pod creates are rare; a delete brings its pod along).
type Plugin struct {
	client kubernetes.Interface
}

// New is the plugin reading through client.
func New(client kubernetes.Interface) *Plugin { return &Plugin{client: client} }

// NodeName is the node a user is, as Kubernetes' node identifier reads it.
func NodeName(u authn.User) (string, bool) {
	name, ok := strings.CutPrefix(u.Name, nodeUserPrefix)
	if !ok || !slices.Contains(u.Groups, nodesGroup) {
		return "", false
	}
	return name, true
}

// Admit checks the writes of nodes; other users' writes pass.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	u, _ := authn.UserFrom(ctx)
	node, isNode := NodeName(u)
	if !isNode {
		return nil
	}
	if node == "" {
		return admission.Forbidden(a, fmt.Errorf("could not determine node from user %q", u.Name))
	}
	if a.Resource.Group == coordinationv1.GroupName && a.Resource.Resource == "leases" {
		return admitLease(node, a)
	}
	if a.Resource.Group != "" {
		return nil
	}
	switch a.Resource.Resource {
	case "pods":
		switch a.Subresource {
		case "":
			return p.admitPod(ctx, node, a)
		case "status":
			return admitPodStatus(node, a)
		case "eviction":
			return p.admitEviction(ctx, node, a)
		default:
			return admission.Forbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource))
		}
	case "nodes":
		return admitNode(node, a)
	}
	return nil
}

func (p *Plugin) admitPod(ctx context.Context, node string, a *generic.Attributes) error {
	switch a.Operation {
	case generic.Create:
		return p.admitPodCreate(ctx, node, a)
	case generic.Delete:
		pod, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
		}
		if pod.Spec.NodeName != node {
			return admission.Forbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node))
		}
		return nil
	default:
		return admission.Forbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node))
	}
}

func (p *Plugin) admitPodCreate(ctx context.Context, node string, a *generic.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if _, mirror := pod.Annotations[mirrorPod]; !mirror {
		return admission.Forbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPod, node))
	}
	if pod.Spec.NodeName != node {
		return admission.Forbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node))
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return admission.Forbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	case 1:
	default:
		return admission.Forbidden(a, fmt.Errorf("node %q can only create pods with a single owner reference set to itself", node))
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node {
		return admission.Forbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", node))
	}
	if owner.Controller == nil || !*owner.Controller {
		return admission.Forbidden(a, fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", node))
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return admission.Forbidden(a, fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", node))
	}
	n, err := p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.Forbidden(a, fmt.Errorf("error looking up node %s to verify uid: %w", node, err))
	}
	if owner.UID != n.UID {
		return admission.Forbidden(a, fmt.Errorf("node %s UID mismatch: expected %s got %s", node, owner.UID, n.UID))
	}
	if pod.Spec.ServiceAccountName != "" {
		return admission.Forbidden(a, fmt.Errorf("node %q can not create pods that reference a service account", node))
	}
	for _, r := range []struct{ resource, what string }{{"secrets", "secrets"}, {"configmaps", "configmaps"}, {"persistentvolumeclaims", "persistentvolumeclaims"}} {
		if len(auth.PodRefs(pod, r.resource)) > 0 {
			return admission.Forbidden(a, fmt.Errorf("node %q can not create pods that reference %s", node, r.what))
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Ephemeral != nil {
			return admission.Forbidden(a, fmt.Errorf("node %q can not create pods that use generic ephemeral volumes", node))
		}
	}
	if len(pod.Spec.ResourceClaims) > 0 {
		return admission.Forbidden(a, fmt.Errorf("node %q can not create pods that reference resourceclaims", node))
	}
	return nil
}

func admitPodStatus(node string, a *generic.Attributes) error {
	if a.Operation != generic.Update {
		return admission.Forbidden(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
	}
	if old.Spec.NodeName != node {
		return admission.Forbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node))
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if !labels.Equals(old.Labels, pod.Labels) {
		return admission.Forbidden(a, fmt.Errorf("node %q cannot update labels through pod status", node))
	}
	return nil
}

func (p *Plugin) admitEviction(ctx context.Context, node string, a *generic.Attributes) error {
	if a.Operation != generic.Create {
		return admission.Forbidden(a, fmt.Errorf("unexpected operation %s", a.Operation))
	}
	name := a.Name
	if ev, ok := a.Object.(*policyv1.Eviction); name == "" && ok {
		name = ev.Name
	}
	if name == "" {
		return apierrors.NewBadRequest("could not determine pod from request data")
	}
	pod, err := p.client.CoreV1().Pods(a.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return admission.Forbidden(a, err)
	}
	if pod.Spec.NodeName != node {
		return admission.Forbidden(a, fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node))
	}
	return nil
}

// admitLease: the node's own heartbeat Lease only. The Node authorizer checks the name of
// updates and deletes; a create names its Lease in the body, which only admission sees.
func admitLease(node string, a *generic.Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return admission.Forbidden(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
	}
	name := a.Name
	if a.Operation == generic.Create {
		l, ok := a.Object.(*coordinationv1.Lease)
		if !ok {
			return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		name = l.Name
	}
	if name != node {
		return admission.Forbidden(a, fmt.Errorf("can only access node lease with the same name as the requesting node"))
	}
	return nil
}

func admitNode(node string, a *generic.Attributes) error {
	if a.Name != node {
		return admission.Forbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", node, a.Name))
	}
	switch a.Operation {
	case generic.Create:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if forbidden := forbiddenLabels(modifiedLabels(n.Labels, nil)); forbidden.Len() > 0 {
			return admission.Forbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(sets.List(forbidden), ", ")))
		}
	case generic.Update:
		n, ok := a.Object.(*corev1.Node)
		old, oldOK := a.OldObject.(*corev1.Node)
		if !ok || !oldOK {
			return admission.Forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return admission.Forbidden(a, fmt.Errorf("node %q is not allowed to modify taints", node))
		}
		if forbidden := forbiddenLabels(modifiedLabels(n.Labels, old.Labels)); forbidden.Len() > 0 {
			return admission.Forbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(sets.List(forbidden), ", ")))
		}
	}
	return nil
}

// modifiedLabels are the keys added, removed or changed between old and now.
func modifiedLabels(now, old map[string]string) sets.Set[string] {
	out := sets.New[string]()
	for k, v := range now {
		if ov, ok := old[k]; !ok || ov != v {
			out.Insert(k)
		}
	}
	for k := range old {
		if _, ok := now[k]; !ok {
			out.Insert(k)
		}
	}
	return out
}

// forbiddenLabels: node-restriction.kubernetes.io/ labels, and kubernetes.io / k8s.io
// labels outside the set kubelets may set on their Node (k8s.io/kubelet's list).
func forbiddenLabels(modified sets.Set[string]) sets.Set[string] {
	out := sets.New[string]()
	for key := range modified {
		ns, _, _ := strings.Cut(key, "/")
		if !strings.Contains(key, "/") {
			ns = ""
		}
		if ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction) {
			out.Insert(key)
		}
		if isKubernetesLabel(ns) && !kubeletapis.IsKubeletLabel(key) {
			out.Insert(key)
		}
	}
	return out
}

func isKubernetesLabel(ns string) bool {
	for _, d := range []string{"kubernetes.io", "k8s.io"} {
		if ns == d || strings.HasSuffix(ns, "."+d) {
			return true
		}
	}
	return false
}
