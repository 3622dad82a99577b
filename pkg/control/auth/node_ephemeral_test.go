package auth

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestNodeReadsItsPodsEphemeralClaims: a node may read the claim POD-VOLUME of a generic
// ephemeral volume of its pod and that claim's volume, as the node authorizer's graph
// has an edge for it, and nothing of another pod's.
func TestNodeReadsItsPodsEphemeralClaims(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	pods := f.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(PodNodeIndexers); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: corev1.PodSpec{NodeName: "node-1",
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}}}
	if err := pods.GetIndexer().Add(pod); err != nil {
		t.Fatal(err)
	}
	pvcs := f.Core().V1().PersistentVolumeClaims().Informer()
	if err := pvcs.GetIndexer().Add(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-scratch"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}); err != nil {
		t.Fatal(err)
	}
	n := NewNode(pods.GetIndexer(), f.Core().V1().PersistentVolumeClaims().Lister())
	node1 := &user.DefaultInfo{Name: "system:node:node-1", Groups: []string{NodesGroup, user.AllAuthenticated}}
	for _, tc := range []decision{
		{"its pod's ephemeral claim", res(node1, "get", "", "persistentvolumeclaims", "", "apps", "web-scratch"), true},
		{"that claim's volume", res(node1, "get", "", "persistentvolumes", "", "", "pv-1"), true},
		{"another claim", res(node1, "get", "", "persistentvolumeclaims", "", "apps", "db-scratch"), false},
	} {
		tc.check(t, n)
	}
}
