package auth

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/minik8s/minik8s/pkg/control/controllers/clusterroleaggregation"
)

// rbacFrom builds the RBAC authorizer over the bootstrap policy plus extra objects, with
// the aggregated roles filled as the aggregation controller fills them.
func rbacFrom(t *testing.T, extra ...any) *RBAC {
	t.Helper()
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	rb := f.Rbac().V1()
	add := func(inf cache.SharedIndexInformer, obj any) {
		if err := inf.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	roles := BootstrapClusterRoles()
	var all []*rbacv1.ClusterRole
	for i := range roles {
		all = append(all, &roles[i])
	}
	for _, o := range extra {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			all = append(all, r)
		}
	}
	// Aggregation cascades (view → edit → admin): repeat until nothing changes.
	for range 3 {
		for _, r := range all {
			if r.AggregationRule != nil {
				r.Rules = clusterroleaggregation.Aggregate(r, all)
			}
		}
	}
	for _, r := range all {
		add(rb.ClusterRoles().Informer(), r)
	}
	for _, b := range BootstrapClusterRoleBindings() {
		add(rb.ClusterRoleBindings().Informer(), &b)
	}
	for _, o := range extra {
		switch o := o.(type) {
		case *rbacv1.Role:
			add(rb.Roles().Informer(), o)
		case *rbacv1.RoleBinding:
			add(rb.RoleBindings().Informer(), o)
		case *rbacv1.ClusterRoleBinding:
			add(rb.ClusterRoleBindings().Informer(), o)
		}
	}
	return NewRBAC(RBACLister{Roles: rb.Roles().Lister(), RoleBindings: rb.RoleBindings().Lister(),
		ClusterRoles: rb.ClusterRoles().Lister(), ClusterRoleBindings: rb.ClusterRoleBindings().Lister()})
}

func roleBinding(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: subjects}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func res(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub,
		Namespace: ns, Name: name, ResourceRequest: true}
}

// decision is a request an authorizer is asked about, and whether it should allow it.
type decision struct {
	name string
	a    authorizer.AttributesRecord
	want bool
}

// check asks authz about tc and reports a wrong answer; it returns the decision.
func (tc decision) check(t *testing.T, authz authorizer.Authorizer) authorizer.Decision {
	t.Helper()
	d, reason, err := authz.Authorize(context.Background(), tc.a)
	if err != nil {
		t.Errorf("%s: %v", tc.name, err)
	}
	if got := d == authorizer.DecisionAllow; got != tc.want {
		t.Errorf("%s: allowed = %v, want %v (%s)", tc.name, got, tc.want, reason)
	}
	return d
}

func path(u user.Info, verb, p string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
}

func TestRBACRules(t *testing.T) {
	viewer := &user.DefaultInfo{Name: "vera", Groups: []string{user.AllAuthenticated}}
	editor := &user.DefaultInfo{Name: "ed", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "ada", Groups: []string{user.AllAuthenticated}}
	picky := &user.DefaultInfo{Name: "pia", Groups: []string{"team", user.AllAuthenticated}}
	robot := &user.DefaultInfo{Name: "system:serviceaccount:apps:robot", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}}
	nobody := &user.DefaultInfo{Name: "nobody", Groups: []string{user.AllAuthenticated}}
	proxy := &user.DefaultInfo{Name: KubeProxyUser, Groups: []string{user.AllAuthenticated}}
	sched := &user.DefaultInfo{Name: SchedulerUser, Groups: []string{user.AllAuthenticated}}
	kcm := &user.DefaultInfo{Name: ControllerManagerUser, Groups: []string{user.AllAuthenticated}}
	node := &user.DefaultInfo{Name: NodeUserPrefix + "node-1", Groups: []string{NodesGroup, user.AllAuthenticated}}

	picker := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "picker"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"one"}},
		{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"*/scale"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
	}}
	metricsReader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/logs/*"}}}}
	extraView := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-view", Labels: map[string]string{aggregateToView: "true"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}}
	a := rbacFrom(t,
		roleBinding("apps", "v", "ClusterRole", "view", userSubject("vera")),
		roleBinding("apps", "e", "ClusterRole", "edit", userSubject("ed")),
		roleBinding("apps", "a", "ClusterRole", "admin", userSubject("ada")),
		picker, roleBinding("apps", "p", "Role", "picker", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team"}),
		roleBinding("apps", "r", "ClusterRole", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot"}), // namespace defaults to the binding's
		roleBinding("apps", "dangling", "Role", "missing", userSubject("nobody")),
		metricsReader, extraView,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "m"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects: []rbacv1.Subject{userSubject("pia")}},
	)
	for _, tc := range []decision{
		{"view reads pods", res(viewer, "list", "", "pods", "", "apps", ""), true},
		{"view only in its namespace", res(viewer, "list", "", "pods", "", "other", ""), false},
		{"view does not read secrets", res(viewer, "get", "", "secrets", "", "apps", "s"), false},
		{"view does not list secrets", res(viewer, "list", "", "secrets", "", "apps", ""), false},
		{"view does not create pods", res(viewer, "create", "", "pods", "", "apps", ""), false},
		{"view reads pods/log", res(viewer, "get", "", "pods", "log", "apps", "p"), true},
		{"view does not exec", res(viewer, "create", "", "pods", "exec", "apps", "p"), false},
		{"view gets what its aggregated roles add", res(viewer, "get", "example.com", "widgets", "", "apps", "w"), true},
		{"edit creates deployments", res(editor, "create", "apps", "deployments", "", "apps", ""), true},
		{"edit scales deployments", res(editor, "update", "apps", "deployments", "scale", "apps", "d"), true},
		{"edit reads secrets", res(editor, "get", "", "secrets", "", "apps", "s"), true},
		{"edit creates tokens", res(editor, "create", "", "serviceaccounts", "token", "apps", "default"), true},
		{"edit cannot change roles", res(editor, "create", rbacv1.GroupName, "roles", "", "apps", ""), false},
		// Since Kubernetes 1.22 (CVE-2021-25740) edit may not write endpoints or their slices.
		{"edit does not write endpointslices", res(editor, "create", discoveryGroup, "endpointslices", "", "apps", ""), false},
		{"edit does not write endpoints", res(editor, "update", "", "endpoints", "", "apps", "e"), false},
		{"edit writes events of events.k8s.io", res(editor, "create", eventsGroup, "events", "", "apps", ""), true},
		{"edit takes leases (leader election)", res(editor, "update", coordGroup, "leases", "", "apps", "l"), true},
		{"view reads events of events.k8s.io", res(viewer, "list", eventsGroup, "events", "", "apps", ""), true},
		{"edit cannot bind roles", res(editor, "update", rbacv1.GroupName, "rolebindings", "", "apps", "x"), false},
		{"admin changes roles", res(admin, "create", rbacv1.GroupName, "rolebindings", "", "apps", ""), true},
		{"admin has edit's rules (aggregated twice)", res(admin, "delete", "", "secrets", "", "apps", "s"), true},
		{"admin is not cluster-wide", res(admin, "list", "", "nodes", "", "", ""), false},
		{"resourceNames: the named one", res(picky, "get", "", "configmaps", "", "apps", "one"), true},
		{"resourceNames: another", res(picky, "get", "", "configmaps", "", "apps", "two"), false},
		{"resourceNames: no list", res(picky, "list", "", "configmaps", "", "apps", ""), false},
		{"*/scale covers a subresource", res(picky, "patch", "apps", "statefulsets", "scale", "apps", "s"), true},
		{"*/scale is not the resource", res(picky, "patch", "apps", "statefulsets", "", "apps", "s"), false},
		{"a subresource rule is not the resource", res(picky, "get", "", "pods", "", "apps", "p"), false},
		{"the subresource rule", res(picky, "get", "", "pods", "log", "apps", "p"), true},
		{"nonResourceURL exact", path(picky, "get", "/metrics"), true},
		{"nonResourceURL prefix*", path(picky, "get", "/logs/kube.log"), true},
		{"nonResourceURL verb", path(picky, "post", "/metrics"), false},
		{"nonResourceURL other", path(picky, "get", "/metricsz"), false},
		{"service account subject", res(robot, "get", "", "pods", "", "apps", "p"), true},
		{"service account subject elsewhere", res(robot, "get", "", "pods", "", "other", "p"), false},
		{"dangling binding grants nothing", res(nobody, "get", "", "pods", "", "apps", "p"), false},
		{"discovery for everyone", path(nobody, "get", "/apis/apps/v1"), true},
		{"self reviews for everyone", res(nobody, "create", authzGroup, "selfsubjectaccessreviews", "", "", ""), true},
		{"whoami for everyone", res(nobody, "create", authnGroup, "selfsubjectreviews", "", "", ""), true},
		{"kube-proxy watches endpointslices", res(proxy, "watch", discoveryGroup, "endpointslices", "", "", ""), true},
		{"kube-proxy does not read secrets", res(proxy, "list", "", "secrets", "", "", ""), false},
		{"a node watches every pod for network policies", res(node, "watch", "", "pods", "", "", ""), true},
		{"a node lists namespaces for network policies", res(node, "list", "", "namespaces", "", "", ""), true},
		{"a node watches network policies", res(node, "watch", networking, "networkpolicies", "", "", ""), true},
		{"a node watches every Service for their node ports (network policies)", res(node, "watch", "", "services", "", "", ""), true},
		{"a node does not change network policies", res(node, "update", networking, "networkpolicies", "", "x", "np"), false},
		{"scheduler binds pods", res(sched, "create", "", "pods", "binding", "apps", "p"), true},
		{"scheduler does not delete nodes", res(sched, "delete", "", "nodes", "", "", "n"), false},
		{"scheduler renews only its lease", res(sched, "update", coordGroup, "leases", "", "kube-system", "kube-controller-manager"), false},
		{"controller manager creates replicasets", res(kcm, "create", "apps", "replicasets", "", "apps", ""), true},
		{"controller manager finalizes namespaces", res(kcm, "update", "", "namespaces", "finalize", "", "apps"), true},
		{"controller manager fills aggregated roles", res(kcm, "update", rbacv1.GroupName, "clusterroles", "", "", "admin"), true},
		{"controller manager publishes the root CA", res(kcm, "create", "", "configmaps", "", "apps", ""), true},
		{"controller manager does not exec into pods", res(kcm, "create", "", "pods", "exec", "apps", "p"), false},
	} {
		if tc.check(t, a) == authorizer.DecisionDeny {
			t.Errorf("%s: RBAC denied; it may only allow or have no opinion", tc.name)
		}
	}
	_, reason, _ := a.Authorize(context.Background(), res(nobody, "get", "", "pods", "", "apps", "p"))
	if reason == "" {
		t.Error("a binding to a missing role should be named in the reason")
	}
}

func TestRulesFor(t *testing.T) {
	a := rbacFrom(t, roleBinding("apps", "v", "ClusterRole", "view", userSubject("vera")))
	vera := &user.DefaultInfo{Name: "vera", Groups: []string{user.AllAuthenticated}}
	resRules, nonRes, incomplete, err := a.RulesFor(context.Background(), vera, "apps")
	if err != nil || incomplete {
		t.Fatalf("RulesFor: incomplete=%v err=%v", incomplete, err)
	}
	var pods, selfReview bool
	for _, r := range resRules {
		for _, name := range r.GetResources() {
			pods = pods || name == "pods"
			selfReview = selfReview || name == "selfsubjectaccessreviews"
		}
	}
	if !pods || !selfReview || len(nonRes) == 0 {
		t.Errorf("rules of a viewer lack pods (%v), self reviews (%v) or discovery (%d)", pods, selfReview, len(nonRes))
	}
	resRules, _, _, _ = a.RulesFor(context.Background(), vera, "other")
	for _, r := range resRules {
		for _, name := range r.GetResources() {
			if name == "pods" {
				t.Error("view's rules leak into a namespace it is not bound in")
			}
		}
	}
}

// TestBootstrapRolesForAddOns: the roles kube-apiserver's bootstrap policy keeps for
// add-ons and delegating servers exist and do what their manifests bind them for: an
// extension server's service account bound to system:auth-delegator reviews tokens and
// access, kube-dns's reads Services, the scheduler binds volumes.
func TestBootstrapRolesForAddOns(t *testing.T) {
	metrics := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:metrics-server", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}}
	dns := &user.DefaultInfo{Name: "system:serviceaccount:kube-system:kube-dns", Groups: []string{"system:serviceaccounts", user.AllAuthenticated}}
	sched := &user.DefaultInfo{Name: SchedulerUser, Groups: []string{user.AllAuthenticated}}
	delegator := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server:system:auth-delegator"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "metrics-server"}}}
	authz := rbacFrom(t, delegator)
	for _, tc := range []decision{
		{"delegator reviews tokens", res(metrics, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), true},
		{"delegator reviews access", res(metrics, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), true},
		{"delegator reads no secrets", res(metrics, "list", "", "secrets", "", "", ""), false},
		{"kube-dns watches services", res(dns, "watch", "", "services", "", "", ""), true},
		{"kube-dns lists endpoints", res(dns, "list", "", "endpoints", "", "", ""), true},
		{"kube-dns writes nothing", res(dns, "update", "", "services", "", "default", "web"), false},
		{"the scheduler binds a claim", res(sched, "update", "", "persistentvolumeclaims", "", "default", "data"), true},
	} {
		tc.check(t, authz)
	}
	names := map[string]bool{}
	for _, r := range BootstrapClusterRoles() {
		names[r.Name] = true
	}
	for _, want := range []string{"system:auth-delegator", "system:heapster", "system:kube-aggregator", "system:kube-dns",
		"system:node-problem-detector", "system:persistent-volume-provisioner", "system:volume-scheduler",
		"system:certificates.k8s.io:legacy-unknown-approver"} {
		if !names[want] {
			t.Errorf("no ClusterRole %s", want)
		}
	}
}
