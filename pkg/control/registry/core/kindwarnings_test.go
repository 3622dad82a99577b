package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The warnings kube-apiserver v1.36.3 sent for the same objects, in its order and words.
func TestKindWarningsAsKubernetes(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Annotations: map[string]string{corev1.BetaStorageClassAnnotation: "x", corev1.MountOptionAnnotation: "ro"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRecycle,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "1.2.3.4", Path: "/x"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "beta.kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{DoNotUseExternalID: "abc", PodCIDR: "2001:DB8::/64", PodCIDRs: []string{"2001:DB8::/64"}}}
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ep", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "2001:DB8::1"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
	ownEP := ep.DeepCopy()
	ownEP.Labels = map[string]string{EndpointsManagedByLabel: EndpointsControllerName}
	fqdn := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "es", Namespace: "default"}, AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"foo.example.com"}}}}
	for _, tc := range []struct {
		name  string
		rules func(obj, old runtime.Object) []string
		obj   runtime.Object
		old   runtime.Object
		want  []string
	}{
		{"PersistentVolume", PersistentVolumeRules.Warnings, pv, nil, []string{
			`metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead`,
			`metadata.annotations[volume.beta.kubernetes.io/mount-options]: deprecated since v1.31; use "mountOptions" attribute instead`,
			`spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.`,
			`spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
		}},
		{"Node", NodeRules.Warnings, node, nil, []string{
			`spec.externalID: this field is deprecated, and is unused by Kubernetes`,
			`spec.podCIDRs[0]: IPv6 CIDR value "2001:DB8::/64" should be in RFC 5952 canonical format ("2001:db8::/64")`,
		}},
		{"Endpoints", EndpointsRules.Warnings, ep, nil, []string{`subsets[0].addresses[0].ip: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`}},
		{"Endpoints of kube's controller", EndpointsRules.Warnings, ownEP, nil, nil},
		{"FQDN EndpointSlice created", EndpointSliceRules.Warnings, fqdn, nil, []string{"spec.addressType: FQDN endpoints are deprecated"}},
		{"FQDN EndpointSlice updated", EndpointSliceRules.Warnings, fqdn, fqdn, nil},
	} {
		if got := tc.rules(tc.obj, tc.old); !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings\n%q, want\n%q", tc.name, got, tc.want)
		}
	}

	// Valid as kube has them: a legacy IP field takes a non-canonical IPv6 address (warned
	// of above); the mount options annotation is refused on a type that mounts without options.
	if errs := registrytest.CreateSteps(EndpointsRules, ep); len(errs) > 0 {
		t.Errorf("Endpoints with a non-canonical IPv6 address: %v", errs)
	}
	hostPath := pv.DeepCopy()
	hostPath.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/x"}}
	hostPath.Spec.NodeAffinity = nil
	errs := registrytest.CreateSteps(PersistentVolumeRules, hostPath)
	if len(errs) != 1 || errs[0].Error() != "metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type" {
		t.Errorf("hostPath volume with the mount options annotation: %v", errs)
	}
	if errs := registrytest.CreateSteps(PersistentVolumeRules, pv); len(errs) > 0 {
		t.Errorf("NFS volume with the mount options annotation: %v", errs)
	}
}
