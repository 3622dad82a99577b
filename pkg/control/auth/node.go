package auth

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"
)

// NodeUserPrefix and NodesGroup identify a node: system:node:<name> in system:nodes.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// PodsByNode is the pod informer index the Node authorizer reads (pods by spec.nodeName).
const PodsByNode = "spec.nodeName"

// PodNodeIndexers index pods by their node; add them to the pod informer before it starts.
var PodNodeIndexers = cache.Indexers{PodsByNode: func(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}}

// Node authorizes the requests of nodes as Kubernetes' Node authorizer does: a node reads
// only the pods bound to it and the secrets, configmaps, claims, volumes and service
// account tokens those pods use; it writes only its own Node, its Lease and its pods'
// status. Anyone else's requests get no opinion.
type Node struct {
	authorizer.AuthorizerFunc
	pods cache.Indexer
	pvcs corelisters.PersistentVolumeClaimLister
}

// NewNode makes the Node authorizer over a pod informer indexed by PodNodeIndexers.
func NewNode(pods cache.Indexer, pvcs corelisters.PersistentVolumeClaimLister) *Node {
	n := &Node{pods: pods, pvcs: pvcs}
	n.AuthorizerFunc = n.authorize
	return n
}

// NodeName returns the node a user is, if it is one.
func NodeName(u user.Info) (string, bool) {
	name, ok := strings.CutPrefix(u.GetName(), NodeUserPrefix)
	if !ok {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == NodesGroup {
			return name, true
		}
	}
	return "", false
}

var nodeRules = NodeRules()

func (n *Node) authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	node, ok := NodeName(a.GetUser())
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionNoOpinion, "unknown node for user " + fmt.Sprintf("%q", a.GetUser().GetName()), nil
	}
	if !a.IsResourceRequest() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if a.GetAPIGroup() == legacyGroup {
		switch a.GetResource() {
		case "secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes":
			return n.authorizeGet(node, a)
		case "serviceaccounts":
			return n.authorizeToken(node, a)
		case "pods":
			return n.authorizePod(node, a)
		case "nodes":
			return n.authorizeNode(node, a)
		}
	}
	if a.GetAPIGroup() == coordGroup && a.GetResource() == "leases" {
		return n.authorizeLease(node, a)
	}
	return n.byRules(a)
}

func (n *Node) byRules(a authorizer.Attributes) (authorizer.Decision, string, error) {
	for i := range nodeRules {
		if RuleAllows(a, &nodeRules[i]) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func noRelationship(node string, _ authorizer.Attributes) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// authorizeGet lets a node get one secret, configmap, claim or volume that a pod bound
// to it uses.
func (n *Node) authorizeGet(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetVerb() != "get" || a.GetName() == "" || a.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "can only get individual resources of this type", nil
	}
	if n.nodeUses(node, a.GetResource(), a.GetNamespace(), a.GetName()) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, noRelationship(node, a), nil
}

// authorizeToken lets a node request tokens for the service accounts of its pods.
func (n *Node) authorizeToken(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetSubresource() != "token" || a.GetVerb() != "create" {
		return authorizer.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
	}
	for _, pod := range n.podsOn(node) {
		if pod.Namespace == a.GetNamespace() && ServiceAccountOf(pod) == a.GetName() {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, noRelationship(node, a), nil
}

// authorizePod: reads of the node's own pods (lists and watches only with the
// spec.nodeName=<node> field selector), its pods' status, and the create and delete of
// pods (mirror pods, the final delete of its pods).
func (n *Node) authorizePod(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetSubresource() {
	case "":
	case "status":
		// As kube's Node authorizer: the NodeRestriction admission plugin refuses the status
		// of another node's pod, from the stored pod; the informer here may not have a pod
		// bound a moment ago yet.
		if a.GetVerb() == "update" || a.GetVerb() == "patch" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	case "eviction":
		return n.byRules(a)
	default:
		return authorizer.DecisionNoOpinion, "", nil
	}
	switch a.GetVerb() {
	case "get":
		pod, ok := n.pod(a.GetNamespace(), a.GetName())
		if !ok {
			return authorizer.DecisionNoOpinion, noRelationship(node, a), nil
		}
		if pod.Spec.NodeName == node {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, noRelationship(node, a), nil
	case "list", "watch":
		if selectsNode(a, node) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
	case "create", "delete":
		// Mirror pods, and pods the node ends: NodeRestriction limits them to the node's own.
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func selectsNode(a authorizer.Attributes, node string) bool {
	reqs, err := a.GetFieldSelector()
	if err != nil {
		return false
	}
	for _, r := range reqs {
		if r.Field == "spec.nodeName" && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) && r.Value == node {
			return true
		}
	}
	return false
}

// authorizeNode: every node may read nodes (routes to the others' pod CIDRs) and create
// its Node; it changes only its own.
func (n *Node) authorizeNode(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch a.GetVerb() {
	case "get", "list", "watch":
		if a.GetSubresource() == "" || a.GetSubresource() == "status" {
			return authorizer.DecisionAllow, "", nil
		}
	case "create":
		if a.GetSubresource() == "" {
			return authorizer.DecisionAllow, "", nil
		}
	case "update", "patch", "delete":
		if a.GetName() == node && (a.GetSubresource() == "" || a.GetSubresource() == "status") {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot modify node '%s'", node, a.GetName()), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeLease: the node's own Lease in kube-node-lease.
func (n *Node) authorizeLease(node string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetNamespace() != corev1.NamespaceNodeLease {
		return authorizer.DecisionNoOpinion, "can only access leases in the kube-node-lease namespace", nil
	}
	if a.GetVerb() == "create" && a.GetName() == "" || a.GetName() == node {
		return n.byRules(a)
	}
	return authorizer.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
}

func (n *Node) podsOn(node string) []*corev1.Pod {
	objs, err := n.pods.ByIndex(PodsByNode, node)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}

func (n *Node) pod(ns, name string) (*corev1.Pod, bool) {
	obj, ok, err := n.pods.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Pod), true
}

// nodeUses tells whether a pod bound to node refers to the object (a persistent volume
// through a claim of such a pod).
func (n *Node) nodeUses(node, resource, ns, name string) bool {
	for _, pod := range n.podsOn(node) {
		if resource == "persistentvolumes" {
			for _, claim := range podClaims(pod) {
				pvc, err := n.pvcs.PersistentVolumeClaims(pod.Namespace).Get(claim)
				if err == nil && pvc.Spec.VolumeName == name {
					return true
				}
			}
			continue
		}
		if pod.Namespace != ns {
			continue
		}
		var refs []string
		if resource == "persistentvolumeclaims" {
			refs = podClaims(pod)
		} else {
			refs = PodRefs(pod, resource)
		}
		for _, ref := range refs {
			if ref == name {
				return true
			}
		}
	}
	return false
}

// podClaims are the claims a pod uses: those of its persistentVolumeClaim volumes and
// those of its generic ephemeral volumes (POD-VOLUME), as the node authorizer's graph
// links them to the pod.
func podClaims(pod *corev1.Pod) []string {
	claims := PodRefs(pod, "persistentvolumeclaims")
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			claims = append(claims, ephemeral.VolumeClaimName(pod, &pod.Spec.Volumes[i]))
		}
	}
	return claims
}

// ServiceAccountOf is the service account a pod runs as: "default" when it names none
// (a mirror pod, which admission leaves without one).
func ServiceAccountOf(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName == "" {
		return "default"
	}
	return pod.Spec.ServiceAccountName
}

// PodRefs are the names of the objects of one resource a pod refers to: volumes
// (projected sources too), env and envFrom of every container, image pull secrets.
func PodRefs(pod *corev1.Pod, resource string) []string {
	var out []string
	add := func(r, name string) {
		if r == resource && name != "" {
			out = append(out, name)
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add("secrets", src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add("configmaps", src.ConfigMap.Name)
				}
			}
		}
	}
	var containers []corev1.Container
	containers = append(containers, pod.Spec.InitContainers...)
	containers = append(containers, pod.Spec.Containers...)
	for _, c := range pod.Spec.EphemeralContainers {
		containers = append(containers, corev1.Container(c.EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				add("secrets", f.SecretRef.Name)
			}
			if f.ConfigMapRef != nil {
				add("configmaps", f.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				add("secrets", e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				add("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return out
}
