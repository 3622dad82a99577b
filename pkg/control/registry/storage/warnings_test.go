package storage

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deprecated node labels are warned of in kube-apiserver v1.36.3's words (matchLabels in
// key order, where kube's order is a map's).
func TestTopologyWarningsAsKubernetes(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "example.com/x",
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: "topology.kubernetes.io/zone", Values: []string{"a"}}, {Key: "failure-domain.beta.kubernetes.io/zone", Values: []string{"a"}}}}}}
	want := []string{`allowedTopologies[0].matchLabelExpressions[1].key: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`}
	if got := StorageClassRules.Warnings(sc, nil); !slices.Equal(got, want) {
		t.Errorf("StorageClass warnings %q, want %q", got, want)
	}
	capacity := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, StorageClassName: "sc",
		NodeTopology: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"failure-domain.beta.kubernetes.io/region": "r", "beta.kubernetes.io/os": "linux", "kubernetes.io/os": "linux"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "beta.kubernetes.io/arch", Operator: metav1.LabelSelectorOpIn, Values: []string{"amd64"}}}}}
	want = []string{
		`nodeTopology.matchExpressions[0].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
		`nodeTopology.matchLabels.beta.kubernetes.io/os: deprecated since v1.14; use "kubernetes.io/os" instead`,
		`nodeTopology.matchLabels.failure-domain.beta.kubernetes.io/region: deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	}
	if got := CSIStorageCapacityRules.Warnings(capacity, capacity); !slices.Equal(got, want) {
		t.Errorf("CSIStorageCapacity warnings\n%q, want\n%q", got, want)
	}
}
