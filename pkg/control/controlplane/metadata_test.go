package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// client-go's metadata client (what the garbage collector uses) lists, watches, gets,
// patches and deletes pods as PartialObjectMetadata, and a metadata informer follows them.
func TestMetadataClient(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := c.adminConfig(t)
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := md.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default")
	// A live owner, or the garbage collector would take the pods away.
	cm, err := c.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
	created := map[string]*corev1.Pod{}
	for _, name := range []string{"m1", "m2"} {
		pod := testPod(name)
		pod.OwnerReferences = []metav1.OwnerReference{owner}
		if created[name], err = c.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || list.ResourceVersion == "" || len(list.Items) != 2 {
		t.Fatalf("metadata list: %v %+v", err, list)
	}
	for _, item := range list.Items {
		want := created[item.Name]
		if want == nil || item.UID != want.UID || item.ResourceVersion != want.ResourceVersion || item.Labels["gen"] != "1" ||
			len(item.OwnerReferences) != 1 || item.OwnerReferences[0].UID != owner.UID {
			t.Errorf("listed metadata %+v, want that of %+v", item.ObjectMeta, want.ObjectMeta)
		}
	}
	got, err := pods.Get(ctx, "m1", metav1.GetOptions{})
	if err != nil || got.UID != created["m1"].UID || got.Labels["gen"] != "1" {
		t.Fatalf("metadata get: %v %+v", err, got)
	}

	inf := metadatainformer.NewSharedInformerFactory(md, 0).ForResource(corev1.SchemeGroupVersion.WithResource("pods")).Informer()
	go inf.Run(ctx.Done())
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("metadata informer did not sync")
	}

	patched, err := pods.Patch(ctx, "m1", types.MergePatchType, []byte(`{"metadata":{"labels":{"gen":"2"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["gen"] != "2" {
		t.Fatalf("metadata patch: %v %+v", err, patched)
	}
	select {
	case ev := <-w.ResultChan():
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if ev.Type != watch.Modified || !ok || m.Name != "m1" || m.Labels["gen"] != "2" || m.ResourceVersion != patched.ResourceVersion {
			t.Fatalf("metadata watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("metadata watch: no event for the patch")
	}
	waitFor(t, "the metadata informer to see the patch", func() bool {
		obj, exists, _ := inf.GetStore().GetByKey("default/m1")
		return exists && obj.(*metav1.PartialObjectMetadata).Labels["gen"] == "2"
	})

	zero := int64(0)
	if err := pods.Delete(ctx, "m2", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatalf("metadata delete: %v", err)
	}
	waitFor(t, "the metadata informer to see the deletion", func() bool {
		_, exists, _ := inf.GetStore().GetByKey("default/m2")
		return !exists
	})
}
