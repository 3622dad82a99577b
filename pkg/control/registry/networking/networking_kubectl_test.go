package networking_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

const networkingObjects = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-allow, namespace: default}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: a}}
      podSelector: {matchLabels: {role: client}}
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
    ports:
    - port: 80
    - port: 8000
      endPort: 8080
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: default}
spec:
  ingressClassName: nginx
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`

// TestNetworkingKubectl: the real kubectl applies, lists, describes and explains the
// networking.k8s.io/v1 kinds, and miniapi refuses an invalid policy with kube's message.
func TestNetworkingKubectl(t *testing.T) {
	testenv.RequireTools(t, "kubectl")
	c := controlplanetest.Start(t, nil)
	c.MustKubectl(t, networkingObjects, "apply", "-f", "-")
	got := c.MustKubectl(t, "", "get", "netpol,ingress,ingressclass", "-A")
	for _, want := range []string{"web-allow   app=web", "web    nginx   web.example.com", "nginx   k8s.io/ingress-nginx   <none>"} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("kubectl get: no %q in\n%s", want, got)
		}
	}
	// The Service range's ServiceCIDR and the `kubernetes` Service's IPAddress, as kubectl shows them.
	got = c.MustKubectl(t, "", "get", "servicecidr,ip")
	for _, want := range []string{`(?m)^servicecidr\.networking\.k8s\.io/kubernetes\s+[0-9a-f.:]+/\d+\s+\d+s$`,
		`(?m)^ipaddress\.networking\.k8s\.io/[0-9a-f.:]+\s+services/default/kubernetes$`} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("kubectl get servicecidr,ip: no %s in\n%s", want, got)
		}
	}
	desc := c.MustKubectl(t, "", "describe", "networkpolicy", "web-allow")
	for _, want := range []string{"PodSelector:     app=web", "NamespaceSelector: team=a", "PodSelector: role=client",
		"IPBlock:", "CIDR: 10.0.0.0/8", "Except: 10.1.0.0/16", "To Port Range: 8000-8080/TCP", "Not affecting egress traffic", "Policy Types: Ingress"} {
		if !strings.Contains(strings.Join(strings.Fields(desc), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("kubectl describe: no %q in\n%s", want, desc)
		}
	}
	if out := c.MustKubectl(t, "", "explain", "networkpolicy.spec.policyTypes"); !strings.Contains(out, "Ingress") {
		t.Errorf("kubectl explain: %s", out)
	}
	bad := strings.Replace(strings.Split(networkingObjects, "---")[0], "endPort: 8080", "endPort: 7000", 1)
	bad = strings.Replace(bad, "web-allow", "bad", 1)
	out, err := c.Kubectl(t, bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.ingress[0].ports[1].endPort: Invalid value: 8000: must be greater than or equal to `port`") {
		t.Errorf("invalid policy: err %v, output:\n%s", err, out)
	}
	badCIDRs := "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata: {name: two-v4}\nspec: {cidrs: [10.0.0.0/24, 10.1.0.0/24]}\n"
	out, err = c.Kubectl(t, badCIDRs, "create", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.cidrs: Invalid value: [\"10.0.0.0/24\",\"10.1.0.0/24\"]: may specify no more than one IP for each IP family") {
		t.Errorf("invalid ServiceCIDR: err %v, output:\n%s", err, out)
	}
}
