package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Authorization modes (--authorization-mode), as kube-apiserver names them.
const (
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// DefaultModes is --authorization-mode's default.
var DefaultModes = []string{ModeNode, ModeRBAC}

// ValidateModes checks an --authorization-mode list.
func ValidateModes(modes []string) error {
	if len(modes) == 0 {
		return errors.New("--authorization-mode: at least one mode is required")
	}
	seen := map[string]bool{}
	for _, m := range modes {
		switch m {
		case ModeNode, ModeRBAC, ModeAlwaysAllow, ModeAlwaysDeny:
		default:
			return fmt.Errorf("--authorization-mode: unknown mode %q; want Node, RBAC, AlwaysAllow or AlwaysDeny", m)
		}
		if seen[m] {
			return fmt.Errorf("--authorization-mode: %q given twice", m)
		}
		seen[m] = true
	}
	if seen[ModeNode] && !seen[ModeRBAC] {
		return errors.New("--authorization-mode: Node needs RBAC too (the Node authorizer leaves everything but nodes' own objects to it)")
	}
	return nil
}

// Authorizers is the chain --authorization-mode builds: system:masters first, then each
// mode in order; the first to allow or deny decides. Its informers read the RBAC objects
// and the pods (for the Node authorizer and bound service account tokens).
type Authorizers struct {
	authorizer.Authorizer
	// Rules lists what a user may do (SelfSubjectRulesReview); nil without RBAC.
	Rules authorizer.RuleResolver
	// Escalation guards writes of RBAC objects; nil without RBAC.
	Escalation *Escalation
	// Pods are every pod (the shared cache), keyed namespace/name and indexed by node.
	Pods     cache.Indexer
	accounts corelisters.ServiceAccountLister
	client   kubernetes.Interface
	synced   []cache.InformerSynced
}

// New builds the chain over factory's informers: the process's shared ones, of a client
// that must not itself need authorizing (system:masters), as is client, which looks up
// what the caches do not hold yet. The caller starts factory.
func New(modes []string, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Authorizers, error) {
	if err := ValidateModes(modes); err != nil {
		return nil, err
	}
	a := &Authorizers{client: client}
	accounts := factory.Core().V1().ServiceAccounts()
	a.accounts = accounts.Lister()
	a.synced = append(a.synced, accounts.Informer().HasSynced)
	podInformer := factory.Core().V1().Pods().Informer()
	if err := podInformer.AddIndexers(PodNodeIndexers); err != nil {
		return nil, err
	}
	a.Pods = podInformer.GetIndexer()
	a.synced = append(a.synced, podInformer.HasSynced)
	chain := []union.NamedAuthorizer{{AuthorizerName: "privileged", Authorizer: privilegedGroups{}}}
	var resolvers []authorizer.RuleResolver
	var rbacAuthz *RBAC
	for _, m := range modes {
		var az authorizer.Authorizer
		switch m {
		case ModeNode:
			pvcs := factory.Core().V1().PersistentVolumeClaims()
			a.synced = append(a.synced, pvcs.Informer().HasSynced)
			az = NewNode(a.Pods, pvcs.Lister())
		case ModeRBAC:
			rbac := factory.Rbac().V1()
			l := RBACLister{Roles: rbac.Roles().Lister(), RoleBindings: rbac.RoleBindings().Lister(),
				ClusterRoles: rbac.ClusterRoles().Lister(), ClusterRoleBindings: rbac.ClusterRoleBindings().Lister()}
			a.synced = append(a.synced, rbac.Roles().Informer().HasSynced, rbac.RoleBindings().Informer().HasSynced,
				rbac.ClusterRoles().Informer().HasSynced, rbac.ClusterRoleBindings().Informer().HasSynced)
			r := NewRBAC(l)
			az, resolvers = r, append(resolvers, r)
			rbacAuthz = r
		case ModeAlwaysAllow:
			az = constant(authorizer.DecisionAllow)
		case ModeAlwaysDeny:
			az = constant(authorizer.DecisionDeny)
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: strings.ToLower(m), Authorizer: az})
	}
	u, err := union.New(chain...)
	if err != nil {
		return nil, err
	}
	a.Authorizer = u
	if len(resolvers) > 0 {
		a.Rules = union.NewRuleResolvers(resolvers...)
	}
	if rbacAuthz != nil {
		a.Escalation = NewEscalation(rbacAuthz, u)
	}
	return a, nil
}

// WaitForCacheSync waits until the informers' caches are filled (their factory started).
func (a *Authorizers) WaitForCacheSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
		return errors.New("authorization caches did not sync")
	}
	return nil
}

// ServiceAccount looks an account up in the cache, then (just created?) in the API:
// what service account tokens are checked against.
func (a *Authorizers) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, err := a.accounts.ServiceAccounts(namespace).Get(name); err == nil {
		return sa, nil
	}
	return a.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Pod looks a pod up in the cache, then in the API.
func (a *Authorizers) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if obj, ok, err := a.Pods.GetByKey(namespace + "/" + name); err == nil && ok {
		return obj.(*corev1.Pod), nil
	}
	return a.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Node reads a node from the watch cache (ResourceVersion 0), as kube-apiserver's
// TokenRequest does for the node of a bound pod.
func (a *Authorizers) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
}

// Secret reads a Secret from the watch cache (ResourceVersion 0), then (just created?)
// from the store: a legacy service account token is checked against its Secret's copy, a
// token bound to a Secret against its UID.
func (a *Authorizers) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := a.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		s, err = a.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return s, err
}

// LabelSecret sets one label on secret (a merge patch, on its UID), as kube-apiserver
// dates a legacy token's use.
func (a *Authorizers) LabelSecret(ctx context.Context, secret *corev1.Secret, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": secret.UID, "labels": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Secrets(secret.Namespace).Patch(ctx, secret.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// privilegedGroups allows system:masters everything, before any mode is asked.
type privilegedGroups struct{}

func (privilegedGroups) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if u := a.GetUser(); u != nil {
		for _, g := range u.GetGroups() {
			if g == user.SystemPrivilegedGroup {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (p privilegedGroups) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

func (privilegedGroups) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func constant(d authorizer.Decision) authorizer.AuthorizerFunc {
	return func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) { return d, "", nil }
}
