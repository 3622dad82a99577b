package auth

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeAuthorizer(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pods := f.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(PodNodeIndexers); err != nil {
		t.Fatal(err)
	}
	pvcs := f.Core().V1().PersistentVolumeClaims().Informer()
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "web",
			Volumes: []corev1.Volume{
				{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}},
			},
			Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "pw"}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "api"}, Spec: corev1.PodSpec{NodeName: "node-2",
			Containers: []corev1.Container{{Name: "c", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "only-2"}}}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "pending"}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "unbound"}}}}}},
	} {
		if err := pods.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := pvcs.GetIndexer().Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}); err != nil {
		t.Fatal(err)
	}
	n := NewNode(pods.GetIndexer(), f.Core().V1().PersistentVolumeClaims().Lister())
	node1 := &user.DefaultInfo{Name: "system:node:node-1", Groups: []string{NodesGroup, user.AllAuthenticated}}
	impostor := &user.DefaultInfo{Name: "system:node:node-1", Groups: []string{user.AllAuthenticated}} // not in system:nodes
	withSelector := func(a authorizer.AttributesRecord, sel string) authorizer.AttributesRecord {
		a.FieldSelectorRequirements = fields.ParseSelectorOrDie(sel).Requirements()
		return a
	}
	for _, tc := range []decision{
		{"secret in its pod's volume", res(node1, "get", "", "secrets", "", "apps", "tls"), true},
		{"secret in its pod's env", res(node1, "get", "", "secrets", "", "apps", "db"), true},
		{"secret of another node's pod", res(node1, "get", "", "secrets", "", "apps", "only-2"), false},
		{"secret of an unscheduled pod", res(node1, "get", "", "secrets", "", "apps", "unbound"), false},
		{"same name, other namespace", res(node1, "get", "", "secrets", "", "other", "tls"), false},
		{"no listing secrets", res(node1, "list", "", "secrets", "", "apps", ""), false},
		{"no watching secrets", res(node1, "watch", "", "secrets", "", "apps", ""), false},
		{"configmap in a projected volume", res(node1, "get", "", "configmaps", "", "apps", "kube-root-ca.crt"), true},
		{"its pod's claim", res(node1, "get", "", "persistentvolumeclaims", "", "apps", "data"), true},
		{"the volume of its pod's claim", res(node1, "get", "", "persistentvolumes", "", "", "pv-1"), true},
		{"another volume", res(node1, "get", "", "persistentvolumes", "", "", "pv-2"), false},
		{"token for its pod's account", res(node1, "create", "", "serviceaccounts", "token", "apps", "web"), true},
		{"token for another account", res(node1, "create", "", "serviceaccounts", "token", "apps", "default"), false},
		{"no reading accounts", res(node1, "get", "", "serviceaccounts", "", "apps", "web"), false},
		{"its pod", res(node1, "get", "", "pods", "", "apps", "web"), true},
		{"another node's pod", res(node1, "get", "", "pods", "", "apps", "api"), false},
		{"watch its pods", withSelector(res(node1, "watch", "", "pods", "", "", ""), "spec.nodeName=node-1"), true},
		{"watch another node's pods", withSelector(res(node1, "watch", "", "pods", "", "", ""), "spec.nodeName=node-2"), false},
		{"list every pod", res(node1, "list", "", "pods", "", "", ""), false},
		{"its pod's status", res(node1, "patch", "", "pods", "status", "apps", "web"), true},
		// As kube's Node authorizer: a pod's status and deletion are the NodeRestriction
		// admission plugin's to refuse, from the stored pod (no lag of the informer: a pod
		// bound a moment ago is the node's at once).
		{"another node's pod's status", res(node1, "update", "", "pods", "status", "apps", "api"), true},
		{"status of a pod the informer has not seen yet", res(node1, "update", "", "pods", "status", "apps", "new"), true},
		{"delete its pod", res(node1, "delete", "", "pods", "", "apps", "web"), true},
		{"delete another node's pod", res(node1, "delete", "", "pods", "", "apps", "api"), true},
		{"delete a pod the informer has not seen yet", res(node1, "delete", "", "pods", "", "apps", "new"), true},
		{"create a mirror pod", res(node1, "create", "", "pods", "", "apps", ""), true},
		{"its node's status", res(node1, "patch", "", "nodes", "status", "", "node-1"), true},
		{"another node's status", res(node1, "patch", "", "nodes", "status", "", "node-2"), false},
		{"update another node", res(node1, "update", "", "nodes", "", "", "node-2"), false},
		{"delete another node", res(node1, "delete", "", "nodes", "", "", "node-2"), false},
		{"read nodes (routes to their pod CIDRs)", res(node1, "list", "", "nodes", "", "", ""), true},
		{"read another node's status", res(node1, "get", "", "nodes", "status", "", "node-2"), true},
		{"register", res(node1, "create", "", "nodes", "", "", ""), true},
		{"its lease", res(node1, "update", coordGroup, "leases", "", corev1.NamespaceNodeLease, "node-1"), true},
		{"another node's lease", res(node1, "update", coordGroup, "leases", "", corev1.NamespaceNodeLease, "node-2"), false},
		{"a lease elsewhere", res(node1, "update", coordGroup, "leases", "", "kube-system", "node-1"), false},
		{"events", res(node1, "create", "", "events", "", "apps", ""), true},
		{"the kubernetes service", res(node1, "get", "", "services", "", "default", "kubernetes"), true},
		{"list every Service (containers' variables)", res(node1, "list", "", "services", "", "", ""), true},
		{"watch every Service", res(node1, "watch", "", "services", "", "", ""), true},
		{"no writing services", res(node1, "update", "", "services", "", "default", "kubernetes"), false},
		{"no deployments", res(node1, "list", "apps", "deployments", "", "", ""), false},
		{"not a node without system:nodes", res(impostor, "get", "", "secrets", "", "apps", "tls"), false},
	} {
		tc.check(t, n)
	}
}
