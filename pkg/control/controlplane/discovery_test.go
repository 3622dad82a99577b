package controlplane

import (
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
)

// client-go's discovery uses aggregated discovery (v2) when the server offers it: one
// request for /api and one for /apis instead of one per group version.
func TestDiscovery(t *testing.T) {
	c := startCluster(t)
	cfg := c.adminConfig(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	if !names[""] || !names["coordination.k8s.io"] {
		t.Errorf("groups %v lack the core or coordination group", names)
	}
	found := map[string]bool{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			found[list.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "v1/pods/binding", "v1/nodes", "v1/namespaces/finalize", "coordination.k8s.io/v1/leases",
		// the reviews behind kubectl auth can-i and whoami, listed as kube-apiserver lists them
		"authorization.k8s.io/v1/selfsubjectaccessreviews", "authorization.k8s.io/v1/localsubjectaccessreviews",
		"authentication.k8s.io/v1/selfsubjectreviews", "authentication.k8s.io/v1/tokenreviews",
		// what the conformance discovery tests expect of every cluster
		"apiregistration.k8s.io/v1/apiservices", "node.k8s.io/v1/runtimeclasses", "storage.k8s.io/v1/csinodes",
		// the storage conformance tests
		"storage.k8s.io/v1/csidrivers", "storage.k8s.io/v1/volumeattachments/status", "storage.k8s.io/v1/csistoragecapacities",
		"storage.k8s.io/v1/volumeattributesclasses",
		// the DRA CRUD conformance tests
		"resource.k8s.io/v1/deviceclasses", "resource.k8s.io/v1/resourceclaims/status", "resource.k8s.io/v1/resourceclaimtemplates", "resource.k8s.io/v1/resourceslices"} {
		if !found[want] {
			t.Errorf("discovery lacks %s", want)
		}
	}
	out := c.mustKubectl(t, "", "api-resources", "--api-group=")
	if !regexpLine(out, `pods\s+po\s+v1\s+true\s+Pod`) {
		t.Errorf("kubectl api-resources:\n%s", out)
	}
	out = c.mustKubectl(t, "", "api-resources", "--api-group=authorization.k8s.io")
	if !regexpLine(out, `selfsubjectaccessreviews\s+authorization.k8s.io/v1\s+false\s+SelfSubjectAccessReview`) {
		t.Errorf("kubectl api-resources --api-group=authorization.k8s.io:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "auth", "can-i", "create", "pods"); strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl auth can-i create pods: %q", out)
	}
	// kubectl -v=6 logs each request; with aggregated discovery it never asks for /api/v1.
	out = c.mustKubectl(t, "", "get", "pods", "-v=6", "--cache-dir", t.TempDir())
	if !strings.Contains(out, "GET https://") {
		t.Fatalf("kubectl -v=6 did not log its requests:\n%s", out)
	}
	if strings.Contains(out, "/api/v1?timeout") || strings.Contains(out, "/api/v1 200") {
		t.Errorf("kubectl fell back to legacy per-group discovery:\n%s", out)
	}
}
