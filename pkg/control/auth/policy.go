package auth

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// The bootstrap policy: the ClusterRoles and ClusterRoleBindings kube-apiserver reconciles
// at every start (its bootstrappolicy package), as far as miniapi serves the resources they
// name, plus the roles of our own components.

const (
	legacyGroup     = ""
	appsGroup       = "apps"
	batchGroup      = "batch"
	extensionsGroup = "extensions"
	policyGroup     = "policy"
	discoveryGroup  = "discovery.k8s.io"
	coordGroup      = "coordination.k8s.io"
	eventsGroup     = "events.k8s.io"
	authzGroup      = "authorization.k8s.io"
	authnGroup      = "authentication.k8s.io"
	autoscaling     = "autoscaling"
	networking      = "networking.k8s.io"
	certsGroup      = "certificates.k8s.io"
	storageGroup    = "storage.k8s.io"
	resourceGroup   = "resource.k8s.io"
)

var (
	read      = []string{"get", "list", "watch"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
)

// eventsRule lets a component record Events, in both APIs.
func eventsRule() *ruleBuilder {
	return rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events")
}

// rule builds a PolicyRule: rule(verbs).groups(...).resources(...). Each list is sorted, as
// kube's rbacv1helpers builds them, so the roles read as kube-apiserver's do.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func rule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: sorted(verbs)}}
}
func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = sorted(g); return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = sorted(r); return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = sorted(n); return b }
func (b *ruleBuilder) urls(u ...string) *ruleBuilder      { b.r.NonResourceURLs = sorted(u); return b }

func sorted(list []string) []string { return sets.List(sets.New(list...)) }

func rules(bs ...*ruleBuilder) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(bs))
	for i, b := range bs {
		out[i] = b.r
	}
	return out
}

// bootstrapLabels mark what the reconciler owns, as in Kubernetes.
func bootstrapMeta(name string, extra map[string]string) metav1.ObjectMeta {
	l := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	for k, v := range extra {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
}

func clusterRole(name string, labels map[string]string, r []rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: bootstrapMeta(name, labels), Rules: r}
}

func aggregated(name string, labels map[string]string, selector string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: bootstrapMeta(name, labels), AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selector: "true"}}}}}
}

const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// The controllers' roles, by the service account names kube-controller-manager gives them.
// miniapi runs every controller in one process as system:kube-controller-manager, so
// each role is also bound to that user.
func controllerRoles() []rbacv1.ClusterRole {
	c := func(name string, r ...*ruleBuilder) rbacv1.ClusterRole {
		return clusterRole("system:controller:"+name, nil, rules(append(r, eventsRule())...))
	}
	return []rbacv1.ClusterRole{
		c("attachdetach-controller", rule(read...).groups(legacyGroup).resources("persistentvolumes", "persistentvolumeclaims", "nodes", "pods")),
		c("certificate-controller",
			rule("get", "list", "watch", "delete").groups(certsGroup).resources("certificatesigningrequests"),
			rule("update").groups(certsGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval"),
			rule("approve").groups(certsGroup).resources("signers").names(certificatesv1.KubeAPIServerClientKubeletSignerName),
			rule("sign").groups(certsGroup).resources("signers").names(certificatesv1.KubeAPIServerClientSignerName,
				certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.KubeletServingSignerName),
			rule("create").groups(authzGroup).resources("subjectaccessreviews")),
		c("clusterrole-aggregation-controller", rule("escalate", "get", "list", "watch", "update", "patch").groups(rbacv1.GroupName).resources("clusterroles")),
		c("cronjob-controller",
			rule("get", "list", "watch", "update").groups(batchGroup).resources("cronjobs"),
			rule("get", "list", "watch", "create", "update", "delete", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("cronjobs/status"),
			rule("update").groups(batchGroup).resources("cronjobs/finalizers"),
			rule("list", "delete").groups(legacyGroup).resources("pods")),
		c("daemon-set-controller",
			rule(read...).groups(appsGroup).resources("daemonsets"),
			rule("update").groups(appsGroup).resources("daemonsets/status", "daemonsets/finalizers"),
			rule(read...).groups(legacyGroup).resources("nodes"),
			rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods"),
			rule("create").groups(legacyGroup).resources("pods/binding"),
			rule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions")),
		c("deployment-controller",
			rule("get", "list", "watch", "update").groups(appsGroup).resources("deployments"),
			rule("update").groups(appsGroup).resources("deployments/status", "deployments/finalizers"),
			rule("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup).resources("replicasets"),
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("pods")),
		c("disruption-controller",
			rule(read...).groups(appsGroup).resources("deployments", "replicasets", "statefulsets"),
			rule(read...).groups(legacyGroup).resources("replicationcontrollers"),
			rule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
			rule("update").groups(policyGroup).resources("poddisruptionbudgets/status"),
			rule("get").groups("*").resources("*/scale"),
			rule("patch", "update").groups(legacyGroup).resources("pods/status")),
		c("endpoint-controller",
			rule(read...).groups(legacyGroup).resources("services", "pods"),
			rule("get", "list", "create", "update", "delete").groups(legacyGroup).resources("endpoints"),
			rule("create").groups(legacyGroup).resources("endpoints/restricted")),
		c("endpointslice-controller",
			rule(read...).groups(legacyGroup).resources("services", "pods", "nodes"),
			rule("update").groups(legacyGroup).resources("services/finalizers"),
			rule("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices")),
		c("endpointslicemirroring-controller",
			rule(read...).groups(legacyGroup).resources("services", "endpoints"),
			rule("update").groups(legacyGroup).resources("services/finalizers", "endpoints/finalizers"),
			rule("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices")),
		c("ephemeral-volume-controller",
			rule(read...).groups(legacyGroup).resources("pods"),
			rule("update").groups(legacyGroup).resources("pods/finalizers"),
			rule("get", "list", "watch", "create").groups(legacyGroup).resources("persistentvolumeclaims")),
		c("generic-garbage-collector", rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*")),
		c("horizontal-pod-autoscaler",
			rule("get", "list", "watch").groups(autoscaling).resources("horizontalpodautoscalers"),
			rule("update").groups(autoscaling).resources("horizontalpodautoscalers/status"),
			rule("get", "update").groups("*").resources("*/scale"),
			rule("list").groups(legacyGroup).resources("pods"),
			rule("list").groups("metrics.k8s.io").resources("pods"),
			rule("get", "list").groups("custom.metrics.k8s.io", "external.metrics.k8s.io").resources("*")),
		c("job-controller",
			rule("get", "list", "watch", "update", "patch").groups(batchGroup).resources("jobs"),
			rule("update").groups(batchGroup).resources("jobs/status", "jobs/finalizers"),
			rule("list", "watch", "create", "delete", "patch").groups(legacyGroup).resources("pods")),
		c("namespace-controller",
			rule("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces"),
			rule("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status"),
			rule("get", "list", "delete", "deletecollection").groups("*").resources("*")),
		c("node-controller",
			rule("get", "list", "update", "delete", "patch").groups(legacyGroup).resources("nodes"),
			rule("patch", "update").groups(legacyGroup).resources("nodes/status"),
			rule("patch", "update").groups(legacyGroup).resources("pods/status"),
			rule("list", "delete").groups(legacyGroup).resources("pods"),
			rule("get").groups(legacyGroup).resources("pods")),
		c("persistent-volume-binder",
			rule("get", "list", "watch", "update", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			rule("update").groups(legacyGroup).resources("persistentvolumes/status"),
			rule(read...).groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update").groups(legacyGroup).resources("persistentvolumeclaims/status"),
			rule(read...).groups(legacyGroup).resources("pods"),
			rule("get", "create", "delete").groups(legacyGroup).resources("services", "endpoints"),
			rule("get").groups(legacyGroup).resources("secrets"),
			rule(read...).groups(legacyGroup).resources("nodes"),
			rule(read...).groups(storageGroup).resources("storageclasses")),
		// minik8s' own provisioner of node-local volumes (pkg/control/controllers/localpath),
		// with what rancher's local-path-provisioner is granted: its helper pods included.
		c("local-path-provisioner",
			rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			rule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "nodes"),
			rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("pods"),
			rule(read...).groups(storageGroup).resources("storageclasses")),
		c("pvc-protection-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("list", "watch", "get").groups(legacyGroup).resources("pods")),
		c("pv-protection-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumes")),
		c("replicaset-controller",
			rule("get", "list", "watch", "update").groups(appsGroup).resources("replicasets"),
			rule("update").groups(appsGroup).resources("replicasets/status", "replicasets/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods")),
		c("replication-controller",
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("replicationcontrollers"),
			rule("update").groups(legacyGroup).resources("replicationcontrollers/status", "replicationcontrollers/finalizers"),
			rule("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods")),
		c("resource-claim-controller",
			rule("get", "list", "watch").groups(legacyGroup).resources("pods"),
			rule("update").groups(legacyGroup).resources("pods/finalizers"),
			rule("get", "list", "watch", "create", "delete").groups(resourceGroup).resources("resourceclaims"),
			rule("update", "patch").groups(resourceGroup).resources("resourceclaims", "resourceclaims/status"),
			rule("update", "patch").groups(legacyGroup).resources("pods/status"),
			rule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding")),
		c("resourcequota-controller",
			rule("list", "watch").groups("*").resources("*"),
			rule("update").groups(legacyGroup).resources("resourcequotas/status")),
		c("root-ca-cert-publisher", rule("create", "update").groups(legacyGroup).resources("configmaps")),
		c("service-account-controller", rule("create").groups(legacyGroup).resources("serviceaccounts")),
		c("service-cidrs-controller",
			rule("get", "list", "watch", "patch", "update").groups(networking).resources("servicecidrs"),
			rule("patch", "update").groups(networking).resources("servicecidrs/finalizers"),
			rule("patch", "update").groups(networking).resources("servicecidrs/status"),
			rule("get", "list", "watch").groups(networking).resources("ipaddresses")),
		c("service-controller",
			rule(read...).groups(legacyGroup).resources("services"),
			rule("patch", "update").groups(legacyGroup).resources("services/status"),
			rule("list", "watch").groups(legacyGroup).resources("nodes")),
		c("statefulset-controller",
			rule("list", "watch").groups(legacyGroup).resources("pods"),
			rule(read...).groups(appsGroup).resources("statefulsets"),
			rule("update").groups(appsGroup).resources("statefulsets/status", "statefulsets/finalizers"),
			rule("get", "create", "delete", "update", "patch").groups(legacyGroup).resources("pods"),
			rule("get", "list", "watch", "create", "delete", "update", "patch").groups(appsGroup).resources("controllerrevisions"),
			rule("get", "create").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims")),
		c("ttl-after-finished-controller", rule("get", "list", "watch", "delete").groups(batchGroup).resources("jobs")),
	}
}

// BootstrapClusterRoles are the default ClusterRoles.
func BootstrapClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil, rules(
			rule("*").groups("*").resources("*"),
			rule("*").urls("*"))),
		clusterRole("system:discovery", nil, rules(rule("get").urls(
			"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
			"/openapi", "/openapi/*", "/version", "/version/"))),
		clusterRole("system:basic-user", nil, rules(
			rule("create").groups(authzGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule("create").groups(authnGroup).resources("selfsubjectreviews"))),
		clusterRole("system:public-info-viewer", nil, rules(rule("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/"))),
		clusterRole("system:service-account-issuer-discovery", nil, rules(rule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"))),
		clusterRole("system:monitoring", nil, rules(rule("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"))),

		// The user-facing roles, built by aggregation (clusterrole-aggregation controller).
		aggregated("admin", nil, aggregateToAdmin),
		aggregated("edit", map[string]string{aggregateToAdmin: "true"}, aggregateToEdit),
		aggregated("view", map[string]string{aggregateToEdit: "true"}, aggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"}, rules(
			rule("create").groups(authzGroup).resources("localsubjectaccessreviews"),
			rule(readWrite...).groups(rbacv1.GroupName).resources("roles", "rolebindings"))),
		// edit and view in kube 1.36's order (the order `kubectl` shows missing rules in),
		// with the extensions group miniapi does not serve, as kube's keep it: a namespace
		// admin may then grant it, as an old chart's roles do. Since 1.22 edit writes
		// neither endpoints nor endpointslices (CVE-2021-25740).
		clusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"}, rules(
			// edit reads what view must not: secrets and the pods' streams.
			rule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			rule("impersonate").groups(legacyGroup).resources("serviceaccounts"),
			rule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			rule("create").groups(legacyGroup).resources("pods/eviction"),
			rule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
			rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
			rule(write...).groups(legacyGroup, eventsGroup).resources("events"),
			rule(write...).groups(appsGroup).resources("statefulsets", "statefulsets/scale", "daemonsets", "deployments",
				"deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
			rule(write...).groups(autoscaling).resources("horizontalpodautoscalers"),
			rule(write...).groups(batchGroup).resources("jobs", "cronjobs"),
			rule(write...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
				"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
			rule(write...).groups(policyGroup).resources("poddisruptionbudgets"),
			rule(write...).groups(networking).resources("networkpolicies", "ingresses"),
			rule(readWrite...).groups(coordGroup).resources("leases"),
			rule(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates"))),
		clusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"}, rules(
			rule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			rule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "pods/status",
				"resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
			rule(read...).groups(legacyGroup).resources("namespaces"),
			rule(read...).groups(legacyGroup, eventsGroup).resources("events"),
			rule(read...).groups(discoveryGroup).resources("endpointslices"),
			rule(read...).groups(appsGroup).resources("controllerrevisions", "statefulsets", "statefulsets/scale", "statefulsets/status",
				"daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"replicasets", "replicasets/scale", "replicasets/status"),
			rule(read...).groups(autoscaling).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			rule(read...).groups(batchGroup).resources("cronjobs", "cronjobs/status", "jobs", "jobs/status"),
			rule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
				"deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
				"replicationcontrollers/scale", "networkpolicies"),
			rule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
			rule(read...).groups(networking).resources("ingresses", "ingresses/status", "networkpolicies"),
			rule(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"))),

		// For add-ons and servers that delegate to this one, which their manifests bind
		// (metrics-server and extension API servers bind system:auth-delegator).
		clusterRole("system:auth-delegator", nil, rules(
			rule("create").groups(authnGroup).resources("tokenreviews"),
			rule("create").groups(authzGroup).resources("subjectaccessreviews"))),
		clusterRole("system:kube-aggregator", nil, rules(rule(read...).groups(legacyGroup).resources("services", "endpoints"))),
		clusterRole("system:kube-dns", nil, rules(rule("list", "watch").groups(legacyGroup).resources("endpoints", "services"))),
		clusterRole("system:heapster", nil, rules(
			rule(read...).groups(legacyGroup).resources("events", "pods", "nodes", "namespaces"),
			rule(read...).groups(extensionsGroup).resources("deployments"))),
		clusterRole("system:node-problem-detector", nil, rules(
			rule("get").groups(legacyGroup).resources("nodes"),
			rule("patch").groups(legacyGroup).resources("nodes/status"),
			eventsRule())),
		clusterRole("system:persistent-volume-provisioner", nil, rules(
			rule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			rule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule("watch").groups(legacyGroup).resources("events"),
			eventsRule())),
		clusterRole("system:volume-scheduler", nil, rules(
			rule("get", "list", "watch", "update", "patch").groups(legacyGroup).resources("persistentvolumes"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule("get", "list", "watch", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims"))),
		approverRole("legacy-unknown-approver", "kubernetes.io/legacy-unknown"), // certificates/v1beta1's LegacyUnknownSignerName

		// Our components.
		clusterRole("system:node-proxier", nil, rules(
			rule("list", "watch").groups(legacyGroup).resources("services", "endpoints"),
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("create", "patch", "update").groups(legacyGroup, eventsGroup).resources("events"),
			rule("list", "watch").groups(discoveryGroup).resources("endpointslices"),
			rule("list", "watch").groups(networking).resources("servicecidrs"))),
		// minilet's NetworkPolicy enforcement needs every pod (peers live on other nodes), as
		// k3s' agents read them for kube-router's controller.
		clusterRole("system:minik8s:network-policy", nil, rules(
			// services: their node ports, which pass the pods' egress chains from INPUT in
			// IPVS mode (package policy)
			rule("list", "watch").groups(legacyGroup).resources("pods", "namespaces", "services"),
			// the Service ranges, which pass the pods' egress chains from INPUT (package policy)
			rule("list", "watch").groups(networking).resources("networkpolicies", "servicecidrs"),
			rule("list", "watch").groups("policy.networking.k8s.io").resources("adminnetworkpolicies", "baselineadminnetworkpolicies"),
			// the DomainNamesSupported condition of a policy whose domainNames peers it cannot enforce
			rule("update").groups("policy.networking.k8s.io").resources("adminnetworkpolicies/status"))),
		// miniapi's metrics.k8s.io reads nodes and pods as metrics-server's role allows it.
		clusterRole("system:metrics-server", nil, rules(
			rule("get").groups(legacyGroup).resources("nodes/metrics"),
			rule("get", "list", "watch").groups(legacyGroup).resources("pods", "nodes"))),
		clusterRole("system:kube-scheduler", nil, rules(
			rule("create", "patch", "update").groups(legacyGroup, eventsGroup).resources("events"),
			rule("create").groups(coordGroup).resources("leases"),
			rule("get", "update").groups(coordGroup).resources("leases").names("kube-scheduler"),
			rule(read...).groups(legacyGroup).resources("nodes"),
			rule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods"),
			rule("create").groups(legacyGroup).resources("bindings", "pods/binding"),
			rule("patch", "update").groups(legacyGroup).resources("pods/status"),
			rule(read...).groups(legacyGroup).resources("replicationcontrollers", "services", "namespaces",
				"persistentvolumeclaims", "persistentvolumes", "configmaps"),
			rule("patch", "update").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
			rule(read...).groups(storageGroup).resources("storageclasses"),
			rule(read...).groups(appsGroup).resources("replicasets", "statefulsets"),
			rule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
			rule("create").groups(authnGroup).resources("tokenreviews"),
			rule("create").groups(authzGroup).resources("subjectaccessreviews"))),
		clusterRole("system:kube-controller-manager", nil, rules(
			rule("create", "patch", "update").groups(legacyGroup, eventsGroup).resources("events"),
			rule("create").groups(coordGroup).resources("leases"),
			rule("get", "update").groups(coordGroup).resources("leases").names("kube-controller-manager"),
			rule("create").groups(legacyGroup).resources("secrets", "serviceaccounts"),
			rule("delete").groups(legacyGroup).resources("secrets"),
			rule("get").groups(legacyGroup).resources("configmaps", "namespaces", "secrets", "serviceaccounts"),
			rule("update").groups(legacyGroup).resources("secrets", "serviceaccounts"),
			rule("create").groups(authnGroup).resources("tokenreviews"),
			rule("create").groups(authzGroup).resources("subjectaccessreviews"),
			// The shared informers read everything (and the garbage collector's metadata).
			rule("list", "watch").groups("*").resources("*"),
			rule("create").groups(legacyGroup).resources("serviceaccounts/token"))),
		// What a node may do, granted through the Node authorizer, which narrows it to the
		// node's own objects (kept as a role for RBAC-only clusters, bound to no one).
		clusterRole("system:node", nil, NodeRules()),
		// Node bootstrap (TLS bootstrapping), as kube-apiserver's bootstrap policy has it.
		clusterRole("system:node-bootstrapper", nil, rules(
			rule("create", "get", "list", "watch").groups(certsGroup).resources("certificatesigningrequests"))),
		clusterRole(NodeClientRole, nil, rules(
			rule("create").groups(certsGroup).resources("certificatesigningrequests/nodeclient"))),
		clusterRole(SelfNodeClientRole, nil, rules(
			rule("create").groups(certsGroup).resources("certificatesigningrequests/selfnodeclient"))),
		approverRole("kube-apiserver-client-approver", certificatesv1.KubeAPIServerClientSignerName),
		approverRole("kube-apiserver-client-kubelet-approver", certificatesv1.KubeAPIServerClientKubeletSignerName),
		approverRole("kubelet-serving-approver", certificatesv1.KubeletServingSignerName),
		clusterRole("system:kubelet-api-admin", nil, rules(
			rule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			rule("proxy").groups(legacyGroup).resources("nodes"),
			rule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log", "nodes/spec", "nodes/configz", "nodes/healthz", "nodes/pods", "nodes/checkpoint"))),
	}
	return append(roles, controllerRoles()...)
}

// NodeRules are the most a node may do (the Node authorizer narrows them further).
func NodeRules() []rbacv1.PolicyRule {
	return rules(
		rule("create", "get", "list", "watch", "update", "patch", "delete").groups(legacyGroup).resources("nodes"),
		rule("patch", "update").groups(legacyGroup).resources("nodes/status"),
		rule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events"),
		rule(read...).groups(legacyGroup).resources("pods"),
		rule("create", "delete").groups(legacyGroup).resources("pods"), // mirror pods
		rule("update", "patch").groups(legacyGroup).resources("pods/status"),
		rule("create").groups(legacyGroup).resources("pods/eviction"),
		rule("get").groups(legacyGroup).resources("secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes"),
		rule("get").groups(legacyGroup).resources("services", "endpoints"),
		rule("list", "watch").groups(legacyGroup).resources("services"),
		rule("update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status"),
		rule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		rule("get", "create", "update", "patch", "delete").groups(coordGroup).resources("leases"),
		rule("create").groups(authnGroup).resources("tokenreviews"),
		rule("create").groups(authzGroup).resources("subjectaccessreviews", "localsubjectaccessreviews"),
		rule("create", "get", "list", "watch").groups(certsGroup).resources("certificatesigningrequests"),
	)
}

// The roles whose holders' kubelet client CSRs the csrapproving controller approves:
// a new node's (bootstrap token) and a node's renewal of its own certificate.
const (
	NodeClientRole     = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	SelfNodeClientRole = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
)

// approverRole may approve CSRs for one signer (kubectl certificate approve checks it).
func approverRole(name, signer string) rbacv1.ClusterRole {
	return clusterRole("system:certificates.k8s.io:"+name, nil, rules(
		rule("approve").groups(certsGroup).resources("signers").names(signer)))
}

// BootstrapClusterRoleBindings bind the default roles.
func BootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	b := func(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: bootstrapMeta(name, nil),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: subjects}
	}
	g := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	u := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	out := []rbacv1.ClusterRoleBinding{
		b("cluster-admin", "cluster-admin", g(user.SystemPrivilegedGroup)),
		b("system:discovery", "system:discovery", g(user.AllAuthenticated)),
		b("system:basic-user", "system:basic-user", g(user.AllAuthenticated)),
		b("system:public-info-viewer", "system:public-info-viewer", g(user.AllAuthenticated), g(user.AllUnauthenticated)),
		b("system:service-account-issuer-discovery", "system:service-account-issuer-discovery", g("system:serviceaccounts")),
		b("system:monitoring", "system:monitoring", g("system:monitoring")),
		b("system:node-proxier", "system:node-proxier", u(KubeProxyUser)),
		b("system:minik8s:network-policy", "system:minik8s:network-policy", g(NodesGroup)),
		b("system:kube-scheduler", "system:kube-scheduler", u(SchedulerUser)),
		b("system:metrics-server", "system:metrics-server", u(MetricsServerUser)),
		b("system:kube-controller-manager", "system:kube-controller-manager", u(ControllerManagerUser)),
		b("system:kube-apiserver-kubelet-client", "system:kubelet-api-admin", u(KubeletClientUser)),
		b("system:kube-dns", "system:kube-dns", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kube-dns", Namespace: "kube-system"}),
		b("system:volume-scheduler", "system:volume-scheduler", u(SchedulerUser)),
		// Bound to no one: the Node authorizer grants it (kube keeps the binding, emptied).
		b("system:node", "system:node"),
	}
	// Node bootstrap, as kubeadm binds it (kubeadm:kubelet-bootstrap,
	// kubeadm:node-autoapprove-bootstrap, kubeadm:node-autoapprove-certificate-rotation),
	// for every bootstrap token rather than kubeadm's default-node-token group only.
	out = append(out,
		b("minik8s:kubelet-bootstrap", "system:node-bootstrapper", g(bootstrapapi.BootstrapDefaultGroup)),
		b("minik8s:node-autoapprove-bootstrap", NodeClientRole, g(bootstrapapi.BootstrapDefaultGroup)),
		b("minik8s:node-autoapprove-certificate-rotation", SelfNodeClientRole, g(NodesGroup)))
	for _, r := range controllerRoles() {
		name := r.Name
		sa := name[len("system:controller:"):]
		out = append(out, b(name, name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "kube-system"}, u(ControllerManagerUser)))
	}
	return out
}

// The users of our components (their client certificates' common names).
const (
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
	KubeProxyUser         = "system:kube-proxy"
	KubeletClientUser     = "kube-apiserver-kubelet-client"
	MetricsServerUser     = "system:metrics-server"
)
