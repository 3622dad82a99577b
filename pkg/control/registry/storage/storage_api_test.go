package storage_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestStorageAPI: miniapi serves the storage.k8s.io/v1 kinds the storage conformance tests
// use, as they call them (create, get, list by label, watch, patch, update, status,
// delete, deletecollection), with kube's defaults and its messages for invalid objects; the
// real kubectl finds them by their names and shows kube's columns.
func TestStorageAPI(t *testing.T) {
	testenv.RequireTools(t, "kubectl")
	ctx := context.Background()
	c := controlplanetest.Start(t, nil)
	// The e2e framework's clients speak protobuf.
	cfg := rest.CopyConfig(c.Config)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf+", "+runtime.ContentTypeJSON
	api := kubernetes.NewForConfigOrDie(cfg).StorageV1()

	t.Run("CSIDriver", func(t *testing.T) {
		drivers := api.CSIDrivers()
		d, err := drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "inline.example.com", Labels: map[string]string{"e2e": "csi"}},
			Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		s := d.Spec // kube's defaults
		if !*s.AttachRequired || *s.PodInfoOnMount || *s.StorageCapacity || *s.RequiresRepublish || *s.SELinuxMount ||
			*s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy || s.PreventPodSchedulingIfMissing != nil {
			t.Errorf("defaults: %+v", s)
		}
		second, err := drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "both.example.com", Labels: map[string]string{"e2e": "csi"}}},
			metav1.CreateOptions{})
		if err != nil || len(second.Spec.VolumeLifecycleModes) != 1 || second.Spec.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
			t.Fatalf("create with default modes: %+v, %v", second, err)
		}
		patched, err := drivers.Patch(ctx, second.Name, types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"both.example.com":"patched"}}}`), metav1.PatchOptions{})
		if err != nil || patched.Labels["both.example.com"] != "patched" || patched.ResourceVersion == second.ResourceVersion {
			t.Fatalf("patch: %+v, %v", patched, err)
		}
		patched.Spec.PodInfoOnMount = ptr.To(true)
		updated, err := drivers.Update(ctx, patched, metav1.UpdateOptions{})
		if err != nil || !*updated.Spec.PodInfoOnMount || updated.Generation != patched.Generation+1 {
			t.Fatalf("update: %+v, %v", updated, err)
		}
		updated.Spec.AttachRequired = ptr.To(false)
		if _, err := drivers.Update(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), "spec.attachedRequired: Invalid value: false: field is immutable") {
			t.Errorf("attachRequired changed: %v", err)
		}
		_, err = drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "bad.example.com"},
			Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Forever"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"`) {
			t.Errorf("bad mode: %v", err)
		}
		list, err := drivers.List(ctx, metav1.ListOptions{LabelSelector: "e2e=csi"})
		if err != nil || len(list.Items) != 2 {
			t.Fatalf("list: %v, %v", list, err)
		}
		out := c.MustKubectl(t, "", "get", "csidrivers")
		if !regexp.MustCompile(`(?m)^NAME\s+ATTACHREQUIRED\s+PODINFOONMOUNT\s+STORAGECAPACITY\s+TOKENREQUESTS\s+REQUIRESREPUBLISH\s+MODES\s+AGE$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^inline\.example\.com\s+true\s+false\s+false\s+<unset>\s+false\s+Ephemeral\s+\d+s$`).MatchString(out) {
			t.Errorf("kubectl get csidrivers:\n%s", out)
		}
		if err := drivers.Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := drivers.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "both.example.com=patched"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		if list, err := drivers.List(ctx, metav1.ListOptions{LabelSelector: "e2e=csi"}); err != nil || len(list.Items) != 0 {
			t.Errorf("after deletion: %v, %v", list, err)
		}
	})

	t.Run("PodWithCSIVolume", func(t *testing.T) {
		// The CSIVolumeSource conformance test only creates, reads, patches and deletes one.
		pods := c.Client.CoreV1().Pods("default")
		pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "csi-inline"}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "vol1", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "e2e-driver.example.com"}}},
				{Name: "vol2", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "e2e-driver.example.com", FSType: ptr.To("ext4"), ReadOnly: ptr.To(true)}}},
			},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "vol1", MountPath: "/mnt/vol1"}, {Name: "vol2", MountPath: "/mnt/vol2"}}}},
		}}, metav1.CreateOptions{})
		if err != nil || pod.Spec.Volumes[1].CSI.Driver != "e2e-driver.example.com" {
			t.Fatalf("create: %+v, %v", pod, err)
		}
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	})

	t.Run("VolumeAttachment", func(t *testing.T) {
		attachments := api.VolumeAttachments()
		newAttachment := func(name string) *storagev1.VolumeAttachment {
			// The conformance tests send a uid; the server gives its own, as kube's.
			return &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}, Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "e2e-test.storage.k8s.io", NodeName: "node-1",
				Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + name)}},
				Status: storagev1.VolumeAttachmentStatus{Attached: true}}
		}
		a, err := attachments.Create(ctx, newAttachment("va-1"), metav1.CreateOptions{})
		if err != nil || a.Status.Attached || a.UID == "va-1" {
			t.Fatalf("create (the status is the attacher's to set): %+v, %v", a, err)
		}
		patched, err := attachments.Patch(ctx, a.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"va-1":"patched"}},"status":{"attached":true}}`), metav1.PatchOptions{})
		if err != nil || patched.Labels["va-1"] != "patched" || patched.Status.Attached {
			t.Fatalf("patch (status only through /status): %+v, %v", patched, err)
		}
		// The status conformance test reads /status through the dynamic client.
		dyn := dynamic.NewForConfigOrDie(c.Config)
		u, err := dyn.Resource(storagev1.SchemeGroupVersion.WithResource("volumeattachments")).Get(ctx, a.Name, metav1.GetOptions{}, "status")
		if err != nil {
			t.Fatalf("get status: %v", err)
		}
		var read storagev1.VolumeAttachment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &read); err != nil || read.Status.Attached || read.Spec.NodeName != "node-1" {
			t.Fatalf("status read: %+v, %v", read, err)
		}
		statusPatched, err := attachments.Patch(ctx, a.Name, types.MergePatchType, []byte(`{"status":{"attached":true},"spec":{"nodeName":"node-2"}}`), metav1.PatchOptions{}, "status")
		if err != nil || !statusPatched.Status.Attached || statusPatched.Spec.NodeName != "node-1" {
			t.Fatalf("patch status: %+v, %v", statusPatched, err)
		}
		statusPatched.Status.Attached = false
		if updated, err := attachments.UpdateStatus(ctx, statusPatched, metav1.UpdateOptions{}); err != nil || updated.Status.Attached {
			t.Fatalf("update status: %+v, %v", updated, err)
		}
		moved := patched.DeepCopy()
		moved.ResourceVersion, moved.Spec.NodeName = "", "node-2"
		if _, err := attachments.Update(ctx, moved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") ||
			!strings.Contains(err.Error(), "field is immutable") {
			t.Errorf("spec changed: %v", err)
		}
		bad := newAttachment("va-bad")
		bad.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{}
		if _, err := attachments.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), "spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName") {
			t.Errorf("two sources: %v", err)
		}
		for _, name := range []string{"va-2", "va-3"} {
			next := newAttachment(name)
			next.Labels = map[string]string{"va-e2e": "updated"}
			if _, err := attachments.Create(ctx, next, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", name, err)
			}
		}
		out := c.MustKubectl(t, "", "get", "volumeattachments", "va-1")
		if !regexp.MustCompile(`(?m)^NAME\s+ATTACHER\s+PV\s+NODE\s+ATTACHED\s+AGE$`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^va-1\s+e2e-test\.storage\.k8s\.io\s+pv-va-1\s+node-1\s+false\s+\d+s$`).MatchString(out) {
			t.Errorf("kubectl get volumeattachments:\n%s", out)
		}
		if err := attachments.Delete(ctx, a.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := attachments.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "va-e2e=updated"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		if list, err := attachments.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
			t.Errorf("after deletion: %v, %v", list, err)
		}
	})

	t.Run("CSIStorageCapacity", func(t *testing.T) {
		capacities := api.CSIStorageCapacities("default")
		newCapacity := func(name string) *storagev1.CSIStorageCapacity {
			return &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "capacity"}},
				StorageClassName: "someclass", Capacity: ptr.To(resource.MustParse("1Gi")),
				NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.example.com/zone": "a"}}}
		}
		created, err := capacities.Create(ctx, newCapacity("csc-1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if _, err := capacities.Create(ctx, newCapacity("csc-1"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("second create: %v", err)
		}
		inNamespace, err := capacities.Watch(ctx, metav1.ListOptions{LabelSelector: "test=capacity"})
		if err != nil {
			t.Fatal(err)
		}
		defer inNamespace.Stop()
		everywhere, err := api.CSIStorageCapacities("").Watch(ctx, metav1.ListOptions{LabelSelector: "test=capacity"})
		if err != nil {
			t.Fatal(err)
		}
		defer everywhere.Stop()
		if _, err := capacities.Create(ctx, newCapacity("csc-2"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A watch from no resourceVersion starts with the existing csc-1, as kube's.
		for _, w := range []watch.Interface{inNamespace, everywhere} {
			var names []string
			for len(names) < 2 {
				select {
				case e := <-w.ResultChan():
					if e.Type != watch.Added {
						t.Fatalf("watch: %v %v", e.Type, e.Object)
					}
					names = append(names, e.Object.(*storagev1.CSIStorageCapacity).Name)
				case <-time.After(30 * time.Second):
					t.Fatalf("watch: only %v", names)
				}
			}
			if names[0] != "csc-1" || names[1] != "csc-2" {
				t.Errorf("watch: %v", names)
			}
		}
		if list, err := api.CSIStorageCapacities("").List(ctx, metav1.ListOptions{LabelSelector: "test=capacity"}); err != nil || len(list.Items) != 2 {
			t.Fatalf("list in all namespaces: %v, %v", list, err)
		}
		patched, err := capacities.Patch(ctx, created.Name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"patched":"true"}}}`), metav1.PatchOptions{})
		if err != nil || patched.Annotations["patched"] != "true" {
			t.Fatalf("patch: %v", err)
		}
		patched.StorageClassName = "other"
		if _, err := capacities.Update(ctx, patched, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), `storageClassName: Invalid value: "other": field is immutable`) {
			t.Errorf("class changed: %v", err)
		}
		bad := newCapacity("csc-bad")
		bad.Capacity = ptr.To(resource.MustParse("-1Gi"))
		if _, err := capacities.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
			!strings.Contains(err.Error(), `capacity: Invalid value: "-1Gi": must be greater than or equal to 0`) {
			t.Errorf("negative capacity: %v", err)
		}
		out := c.MustKubectl(t, "", "get", "csistoragecapacities", "-n", "default")
		if !regexp.MustCompile(`(?m)^NAME\s+STORAGECLASSNAME\s+CAPACITY$`).MatchString(out) || !regexp.MustCompile(`(?m)^csc-1\s+someclass\s+1Gi$`).MatchString(out) {
			t.Errorf("kubectl get csistoragecapacities:\n%s", out)
		}
		if err := capacities.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=capacity"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		if list, err := capacities.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
			t.Errorf("after deletion: %v, %v", list, err)
		}
	})

	t.Run("VolumeAttributesClass", func(t *testing.T) {
		classes := api.VolumeAttributesClasses()
		class := `apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: gold, labels: {tier: gold}}
driverName: e2e-fake-csi-driver.example.com
parameters: {iops: "3000"}
`
		c.MustKubectl(t, class, "apply", "-f", "-")
		out := c.MustKubectl(t, "", "get", "vac")
		if !regexp.MustCompile(`(?m)^NAME\s+DRIVERNAME\s+AGE$`).MatchString(out) || !regexp.MustCompile(`(?m)^gold\s+e2e-fake-csi-driver\.example\.com\s+\d+s$`).MatchString(out) {
			t.Errorf("kubectl get vac:\n%s", out)
		}
		patched, err := classes.Patch(ctx, "gold", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"gold":"patched"}}}`), metav1.PatchOptions{})
		if err != nil || patched.Labels["gold"] != "patched" {
			t.Fatalf("patch: %v", err)
		}
		patched.Labels["gold"] = "updated"
		updated, err := classes.Update(ctx, patched, metav1.UpdateOptions{})
		if err != nil || updated.Labels["gold"] != "updated" {
			t.Fatalf("update: %v", err)
		}
		out, err = c.Kubectl(t, strings.Replace(class, `"3000"`, `"6000"`, 1), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "parameters: Forbidden: updates to parameters are forbidden.") {
			t.Errorf("parameters changed: %v\n%s", err, out)
		}
		out, err = c.Kubectl(t, strings.Replace(strings.Replace(class, "gold", "empty", -1), "driverName: e2e-fake-csi-driver.example.com\n", "", 1), "create", "-f", "-")
		if err == nil || !strings.Contains(out, "driverName: Required value") {
			t.Errorf("no driver name: %v\n%s", err, out)
		}
		if list, err := classes.List(ctx, metav1.ListOptions{LabelSelector: "gold=updated"}); err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v, %v", list, err)
		}
		if err := classes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "gold=updated"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		if _, err := classes.Get(ctx, "gold", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after deletion: %v", err)
		}
	})
}
