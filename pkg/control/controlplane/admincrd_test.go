package controlplane

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/network/policy/admincrd"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAdminNetworkPoliciesServedWhenReady: once miniapi says it is ready (systemd's
// READY=1), an AdminNetworkPolicy applies at once: the definitions miniapi installs are
// Established and discovered before it says so.
func TestAdminNetworkPoliciesServedWhenReady(t *testing.T) {
	ready := make(chan error, 1)
	var dataDir string
	c := startClusterWith(t, func(o *Options) {
		dataDir = o.DataDir
		// At the moment it says so, as a process waiting for READY=1 would look next.
		o.Ready = func() {
			cfg, err := clientcmd.BuildConfigFromFlags("", AdminKubeconfig(dataDir))
			if err == nil {
				var crds *crdclient.Clientset
				if crds, err = crdclient.NewForConfig(cfg); err == nil {
					err = admincrd.Established(context.Background(), crds.ApiextensionsV1())
				}
			}
			ready <- err
		}
	})
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("miniapi said it was ready before the admin network policy definitions were served: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("miniapi never said it was ready")
	}
	anp := `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-from-lab}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {tier: restricted}}}
  ingress:
  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
`
	c.mustKubectl(t, anp, "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "adminnetworkpolicies"); !regexp.MustCompile(`(?m)^deny-from-lab\s+10\s`).MatchString(out) {
		t.Errorf("kubectl get adminnetworkpolicies:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "api-resources", "--api-group", "policy.networking.k8s.io"); !strings.Contains(out, "baselineadminnetworkpolicies") {
		t.Errorf("kubectl api-resources lacks the BaselineAdminNetworkPolicy:\n%s", out)
	}
}
