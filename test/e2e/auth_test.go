package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/pki"
	"k8s.io/client-go/tools/clientcmd"
)

const authObjects = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: viewers, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: vera}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editors, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: ed}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: admins, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: ada}]
---
apiVersion: v1
kind: Secret
metadata: {name: only-1, namespace: team}
stringData: {v: one}
---
apiVersion: v1
kind: Secret
metadata: {name: only-2, namespace: team}
stringData: {v: two}
---
apiVersion: v1
kind: Pod
metadata: {name: on-1, namespace: team}
spec:
  nodeName: node-1
  containers:
  - name: app
    image: localhost/minik8s/netexec:v1
    env: [{name: V, valueFrom: {secretKeyRef: {name: only-1, key: v}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-2, namespace: team}
spec:
  nodeName: node-2
  containers:
  - name: app
    image: localhost/minik8s/netexec:v1
    env: [{name: V, valueFrom: {secretKeyRef: {name: only-2, key: v}}}]
`

// TestAuthorization runs the real kubectl as different users against a two-node lab: a
// view user reads pods but not secrets; an edit user writes secrets but not RBAC; an
// admin user binds view but cannot escalate to cluster-admin;
// `kubectl auth can-i (--list)` and `kubectl auth whoami` answer as the roles say; node-1's
// credentials read the secret of its own pod but not one used only on node-2, and patch
// only their own Node's status; a pod's projected token works with client-go's
// InClusterConfig from inside the pod (once its account is given a role) and is rejected
// after the pod is deleted; `kubectl create token` tokens authenticate as the account.
func TestAuthorization(t *testing.T) {
	l := upLab(t, "e2e-auth", 2)
	applyYAML(t, l, authObjects)
	as := usersOf(t, l)

	// view
	if out := as.run("vera", "get", "pods", "-n", "team"); as.err != nil {
		t.Errorf("view user cannot list pods: %v\n%s", as.err, out)
	}
	for _, args := range [][]string{
		{"get", "secret", "only-1", "-n", "team"},
		{"get", "secrets", "-n", "team"},
		{"create", "secret", "generic", "x", "--from-literal=a=b", "-n", "team"},
		{"get", "pods", "-n", "default"},
	} {
		out := as.run("vera", args...)
		if as.err == nil || !strings.Contains(strings.ToLower(out), "forbidden") || !strings.Contains(out, `User "vera" cannot`) {
			t.Errorf("view user: kubectl %v: want Forbidden, got %v\n%s", args, as.err, out)
		}
	}
	if out := strings.TrimSpace(as.run("vera", "auth", "can-i", "create", "secrets", "-n", "team")); out != "no" {
		t.Errorf("view user: can-i create secrets = %q, want no", out)
	}
	if out := strings.TrimSpace(as.run("vera", "auth", "can-i", "watch", "deployments.apps", "-n", "team")); out != "yes" {
		t.Errorf("view user: can-i watch deployments = %q, want yes", out)
	}
	list := as.run("vera", "auth", "can-i", "--list", "-n", "team")
	if !hasRuleLine(list, "pods", "get list watch") || hasRuleLine(list, "secrets", "") || !hasRuleLine(list, "selfsubjectaccessreviews.authorization.k8s.io", "create") {
		t.Errorf("view user: can-i --list does not match the view role:\n%s", list)
	}
	if out := as.run("vera", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != "vera" {
		t.Errorf("whoami = %q, want vera", out)
	}

	// impersonation: the admin acting as vera gets vera's answers; vera cannot act as anyone
	if out, err := cluster.Kubectl(context.Background(), l, "get", "secrets", "-n", "team", "--as=vera"); err == nil || !strings.Contains(out, `User "vera" cannot list resource "secrets"`) {
		t.Errorf("admin --as=vera read secrets: %v\n%s", err, out)
	}
	if out := as.run("vera", "get", "pods", "-n", "team", "--as=admin", "--as-group=system:masters"); as.err == nil || !strings.Contains(out, `cannot impersonate resource "users"`) {
		t.Errorf("vera impersonated admin: %v\n%s", as.err, out)
	}

	// edit
	if out := as.run("ed", "create", "secret", "generic", "made-by-ed", "--from-literal=a=b", "-n", "team"); as.err != nil {
		t.Errorf("edit user cannot create a secret: %v\n%s", as.err, out)
	}
	for _, args := range [][]string{
		{"create", "role", "r", "--verb=get", "--resource=pods", "-n", "team"},
		{"create", "rolebinding", "b", "--clusterrole=admin", "--user=ed", "-n", "team"},
		{"delete", "rolebinding", "viewers", "-n", "team"},
		{"create", "clusterrolebinding", "c", "--clusterrole=cluster-admin", "--user=ed"},
	} {
		out := as.run("ed", args...)
		if as.err == nil || !strings.Contains(strings.ToLower(out), "forbidden") || !strings.Contains(out, `User "ed" cannot`) {
			t.Errorf("edit user: kubectl %v: want Forbidden, got %v\n%s", args, as.err, out)
		}
	}

	// admin: RBAC in its namespace, without escalating
	if out := as.run("ada", "create", "rolebinding", "more-viewers", "--clusterrole=view", "--user=eve", "-n", "team"); as.err != nil {
		t.Errorf("admin user cannot bind view in its namespace: %v\n%s", as.err, out)
	}
	for _, args := range [][]string{
		{"create", "rolebinding", "root", "--clusterrole=cluster-admin", "--user=ada", "-n", "team"},
		{"create", "role", "nodes", "--verb=list", "--resource=nodes", "-n", "team"},
	} {
		out := as.run("ada", args...)
		if as.err == nil || !strings.Contains(out, "attempting to grant RBAC permissions not currently held") {
			t.Errorf("admin user: kubectl %v: want an escalation refusal, got %v\n%s", args, as.err, out)
		}
	}

	// nodes
	waitFor(t, "pods on-1 and on-2 Running", 90*time.Second, func() (bool, string) {
		out := mustKubectl(t, l, "get", "pods", "-n", "team", "-o", "jsonpath={.items[*].status.phase}")
		return out == "Running Running", out
	})
	if out := as.run("node-1", "get", "secret", "only-1", "-n", "team", "-o", "jsonpath={.data.v}"); as.err != nil || out != "b25l" {
		t.Errorf("node-1 cannot read the secret of its own pod: %v\n%s", as.err, out)
	}
	if out := as.run("node-1", "get", "secret", "only-2", "-n", "team"); as.err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("node-1 read a secret used only on node-2: %v\n%s", as.err, out)
	}
	if out := as.run("node-1", "get", "pod", "on-2", "-n", "team"); as.err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("node-1 read a pod of node-2: %v\n%s", as.err, out)
	}
	patch := `{"metadata":{"annotations":{"e2e/patched":"yes"}}}`
	if out := as.run("node-1", "patch", "node", "node-2", "--subresource=status", "--type=merge", "-p", patch); as.err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("node-1 patched node-2's status: %v\n%s", as.err, out)
	}
	if out := as.run("node-1", "patch", "node", "node-1", "--subresource=status", "--type=merge", "-p", patch); as.err != nil {
		t.Errorf("node-1 cannot patch its own status: %v\n%s", as.err, out)
	}

	// minilet's node API asks the API server (SubjectAccessReview) who may call it: node-1
	// may not reach node-2's, the API server's own client may (kubectl logs works).
	node2API := "https://" + l.Nodes[1].IP + ":10250"
	if out := as.run("node-1", "--server", node2API, "get", "--raw", "/pods"); as.err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("node-1 called node-2's node API: %v\n%s", as.err, out)
	}
	if out, err := cluster.Kubectl(context.Background(), l, "logs", "-n", "team", "on-2"); err != nil {
		t.Errorf("kubectl logs through the node API: %v\n%s", err, out)
	}

	// a pod's own token, from inside the pod
	incluster := func() string {
		out, _ := cluster.Kubectl(context.Background(), l, "exec", "-n", "team", "on-1", "--", "/incluster")
		return out
	}
	if out := incluster(); !strings.Contains(out, "status: 403") || !strings.Contains(out, `system:serviceaccount:team:default`) {
		t.Errorf("in-cluster client without a role: want 403 naming its account, got\n%s", out)
	}
	mustKubectl(t, l, "create", "rolebinding", "sa-view", "--clusterrole=view", "--serviceaccount=team:default", "-n", "team")
	waitFor(t, "the in-cluster client to read its pod", 20*time.Second, func() (bool, string) {
		out := incluster()
		return strings.Contains(out, "status: 200"), out
	})
	token := mustKubectl(t, l, "exec", "-n", "team", "on-1", "--", "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token")
	if out := as.withToken(token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.extra.authentication\\.kubernetes\\.io/pod-name}"); as.err != nil || out != `["on-1"]` {
		t.Errorf("the pod's token does not say its pod: %v\n%s", as.err, out)
	}
	mustKubectl(t, l, "delete", "pod", "on-1", "-n", "team", "--wait=true")
	if out := as.withToken(token, "get", "pods", "-n", "team"); as.err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("the token of a deleted pod was accepted: %v\n%s", as.err, out)
	}

	// kubectl create token
	made := strings.TrimSpace(as.run("ed", "create", "token", "default", "-n", "team", "--duration=15m"))
	if out := as.withToken(made, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); as.err != nil || out != "system:serviceaccount:team:default" {
		t.Errorf("kubectl create token: whoami = %q (%v)", out, as.err)
	}
	if out := as.withToken(made, "get", "secrets", "-n", "team"); as.err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("a view service account read secrets: %v\n%s", as.err, out)
	}
}

// users runs kubectl in the lab as other users: certificates of the lab's CA (nodes use
// the kubeconfig minilet runs with), or a bearer token.
type users struct {
	t       *testing.T
	l       *lab.Lab
	dir     string
	ca      *pki.CA
	server  string
	caFile  string
	configs map[string]string
	err     error
}

func usersOf(t *testing.T, l *lab.Lab) *users {
	caDir := filepath.Join(l.StateDir, "miniapi", "pki")
	ca, err := pki.EnsureCA(caDir)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(l.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	server := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster].Server
	return &users{t: t, l: l, dir: t.TempDir(), ca: ca, server: server, caFile: filepath.Join(caDir, pki.CACertFile), configs: map[string]string{}}
}

func (u *users) kubeconfig(name string) string {
	if p, ok := u.configs[name]; ok {
		return p
	}
	p := filepath.Join(u.l.StateDir, name+".kubeconfig") // a node's own
	if !strings.HasPrefix(name, "node-") {
		p = filepath.Join(u.dir, name+".kubeconfig")
		if err := u.ca.WriteKubeconfig(p, u.server, name, nil); err != nil {
			u.t.Fatal(err)
		}
	}
	u.configs[name] = p
	return p
}

func (u *users) kubectl(args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := lab.Command(ctx, u.l.ControlPlane.NetNS, "kubectl", args...).CombinedOutput()
	u.err = err
	return string(out)
}

// run is kubectl as user; u.err says whether it failed.
func (u *users) run(user string, args ...string) string {
	return u.kubectl(append([]string{"--kubeconfig", u.kubeconfig(user)}, args...)...)
}

// withToken is kubectl with only a bearer token (an empty kubeconfig: no certificate).
func (u *users) withToken(token string, args ...string) string {
	empty := filepath.Join(u.dir, "empty.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		u.t.Fatal(err)
	}
	return u.kubectl(append([]string{"--kubeconfig", empty, "--server", u.server, "--certificate-authority", u.caFile,
		"--token", strings.TrimSpace(token)}, args...)...)
}

// hasRuleLine: `kubectl auth can-i --list` has a line for resource whose verbs contain verbs.
func hasRuleLine(list, resource, verbs string) bool {
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == resource && strings.Contains(line, verbs) {
			return true
		}
	}
	return false
}
