package storage

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A StorageClass's allowedTopologies are checked as kube-apiserver v1.36.3 checks them:
// values required and once each, keys valid and once per term, terms not repeated (and a
// term with no requirements repeating each of the empty terms kube starts from).
func TestStorageClassAllowedTopologies(t *testing.T) {
	req := func(key string, values ...string) corev1.TopologySelectorLabelRequirement {
		return corev1.TopologySelectorLabelRequirement{Key: key, Values: values}
	}
	term := func(reqs ...corev1.TopologySelectorLabelRequirement) corev1.TopologySelectorTerm {
		return corev1.TopologySelectorTerm{MatchLabelExpressions: reqs}
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "example.com/x",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
		AllowedTopologies: []corev1.TopologySelectorTerm{
			term(req("")),
			term(req("zone", "a", "a"), req("zone", "b")),
			term(req("rack", "r1")),
			term(req("rack", "r1")),
			term(),
		}}
	var got []string
	for _, e := range StorageClassRules.Validate(sc) {
		got = append(got, e.Error())
	}
	want := []string{
		"allowedTopologies[0].matchLabelExpressions[0].values: Required value",
		`allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: "": name part must be non-empty`,
		`allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`allowedTopologies[1].matchLabelExpressions[0].values[1]: Duplicate value: "a"`,
		`allowedTopologies[1].matchLabelExpressions[1].key: Duplicate value: "zone"`,
		`allowedTopologies[3].matchLabelExpressions: Duplicate value: ""`,
		`allowedTopologies[4].matchLabelExpressions: Duplicate value: ""`,
		`allowedTopologies[4].matchLabelExpressions: Duplicate value: ""`,
		`allowedTopologies[4].matchLabelExpressions: Duplicate value: ""`,
		`allowedTopologies[4].matchLabelExpressions: Duplicate value: ""`,
		`allowedTopologies[4].matchLabelExpressions: Duplicate value: ""`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A StorageClass's parameters, provisioner, reclaim policy and binding mode are immutable in
// kube-apiserver v1.36.3's words and order.
func TestStorageClassImmutableFields(t *testing.T) {
	old := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "example.com/x",
		Parameters: map[string]string{"a": "1"}, ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	sc := old.DeepCopy()
	sc.Provisioner, sc.Parameters = "example.com/y", map[string]string{"a": "2"}
	sc.ReclaimPolicy, sc.VolumeBindingMode = ptr.To(corev1.PersistentVolumeReclaimRetain), ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	var got []string
	for _, e := range StorageClassRules.ValidateUpdate(sc, old) {
		got = append(got, e.Error())
	}
	want := []string{
		`parameters: Invalid value: {"a":"2"}: field is immutable`,
		`provisioner: Invalid value: "example.com/y": field is immutable`,
		`reclaimPolicy: Invalid value: "Retain": field is immutable`,
		`volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
