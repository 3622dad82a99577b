// Package localpath is minik8s' dynamic provisioner of node-local volumes, what kind and
// k3s ship as rancher's local-path-provisioner and minikube as its hostpath provisioner: a
// claim of a StorageClass whose provisioner is minik8s.io/local-path gets a hostPath
// PersistentVolume in a directory of its own on one node, pinned there by node affinity.
// With volumeBindingMode WaitForFirstConsumer the node is the one the scheduler chose for
// the claim's first pod (the volume.kubernetes.io/selected-node annotation); with
// Immediate it is the schedulable node holding the fewest such volumes. Directories are
// made (mode 0777, as local-path-provisioner makes them) and removed by short-lived helper
// pods on the node, since only the node can touch its disk; a Released volume of reclaim
// policy Delete is deleted once its directory is gone.
package localpath

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/minik8s/minik8s/internal/controller/nodeready"
	"github.com/minik8s/minik8s/internal/controller/volumes"
	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Name is the controller's name in Events and --controllers.
const Name = "local-path-provisioner"

// Provisioner is the provisioner name StorageClasses give to have volumes made here.
const Provisioner = "minik8s.io/local-path"

// The StorageClass parameters it reads, and their defaults.
const (
	ParamPath          = "path"        // the directory on each node the volumes are made in
	ParamHelperImage   = "helperImage" // the image of the helper pods (needs sh, mkdir, chmod, rm)
	DefaultPath        = "/var/lib/minik8s/storage"
	DefaultHelperImage = "localhost/minik8s/busybox:v1"
)

// helperNamespace holds the helper pods, as local-path-provisioner runs them in its own.
const helperNamespace = metav1.NamespaceSystem

// poll is how soon a key is looked at again while its helper pod runs.
const poll = time.Second

// Controller provisions and deletes local-path volumes.
type Controller struct{ *volumes.Base }

// New wires the controller to the shared informers.
func New(client kubernetes.Interface, pvs coreinformers.PersistentVolumeInformer, pvcs coreinformers.PersistentVolumeClaimInformer,
	nodes coreinformers.NodeInformer, classes storageinformers.StorageClassInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	b, err := volumes.New("local-path-", client, pvs, pvcs, nodes, classes, recorder, log)
	if err != nil {
		return nil, err
	}
	return &Controller{b}, nil
}

// Run works the queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.Work(ctx, c.syncClaim, c.syncVolume)
}

// class is the claim's StorageClass when it is one of ours.
func (c *Controller) class(pvc *corev1.PersistentVolumeClaim) *storagev1.StorageClass {
	name := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if name == "" {
		return nil
	}
	sc, err := c.Classes.Get(name)
	if err != nil || sc.Provisioner != Provisioner {
		return nil
	}
	return sc
}

func (c *Controller) syncClaim(ctx context.Context, key string) (time.Duration, error) {
	pvc, found, err := workloop.Lookup(key, c.PVCs.PersistentVolumeClaims)
	if !found {
		return 0, err
	}
	sc := c.class(pvc)
	if sc == nil || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
		return 0, nil
	}
	pvName := "pvc-" + string(pvc.UID)
	if _, err := c.PVs.Get(pvName); err == nil {
		return 0, nil // made already: the PV controller binds it
	}
	params, err := parameters(sc)
	if err != nil {
		c.Recorder.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", err.Error())
		return 0, nil
	}
	node, err := c.node(pvc, sc)
	if node == "" || err != nil {
		return 0, err // waiting for the scheduler, or no node yet (err says why)
	}
	dir := path.Join(params.path, fmt.Sprintf("%s_%s_%s", pvName, pvc.Namespace, pvc.Name))
	// The start of each attempt is told on the claim as sig-storage-lib-external-provisioner
	// tells it, when the helper that makes the directory is made.
	started := func() {
		c.Recorder.Eventf(pvc, corev1.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", pvc.Namespace+"/"+pvc.Name)
	}
	done, err := c.runHelper(ctx, "create-"+pvName, node, params, dir, `mkdir -m 0777 -p "$VOL_DIR" && chmod 0777 "$VOL_DIR"`, started)
	if err != nil {
		c.Recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", sc.Name, err)
		return 0, err
	}
	if !done {
		return poll, nil
	}
	pv := volume(pvName, dir, node, pvc, sc)
	if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		c.Recorder.Eventf(pvc, corev1.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", sc.Name, err)
		return 0, err
	}
	c.Recorder.Eventf(pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pvName)
	return 0, nil
}

// node is where the claim's volume goes: the scheduler's choice for WaitForFirstConsumer
// ("" until it chose), else the schedulable node with the fewest of our volumes.
func (c *Controller) node(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) (string, error) {
	if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		return pvc.Annotations[storagehelpers.AnnSelectedNode], nil
	}
	nodes, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	pvs, err := c.PVs.List(labels.Everything())
	if err != nil {
		return "", err
	}
	held := map[string]int{}
	for _, pv := range pvs {
		if n := nodeOf(pv); n != "" && pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] == Provisioner {
			held[n]++
		}
	}
	best := ""
	for _, n := range nodes {
		if n.Spec.Unschedulable || !nodeready.Ready(n) {
			continue
		}
		if best == "" || held[n.Name] < held[best] || (held[n.Name] == held[best] && n.Name < best) {
			best = n.Name
		}
	}
	if best == "" {
		return "", fmt.Errorf("no schedulable Ready node for claim %s/%s", pvc.Namespace, pvc.Name)
	}
	return best, nil
}

// volume is the PersistentVolume for the claim: a hostPath in dir on node, pre-bound to
// the claim, with the class's reclaim policy and mount options.
func volume(name, dir, node string, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) *corev1.PersistentVolume {
	policy := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		policy = *sc.ReclaimPolicy
	}
	dirType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{storagehelpers.AnnDynamicallyProvisioned: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              sc.Name,
			MountOptions:                  sc.MountOptions,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
}

// nodeOf is the node a volume of ours is pinned to.
func nodeOf(pv *corev1.PersistentVolume) string {
	a := pv.Spec.NodeAffinity
	if a == nil || a.Required == nil {
		return ""
	}
	for _, t := range a.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

func (c *Controller) syncVolume(ctx context.Context, name string) (time.Duration, error) {
	pv, err := c.PVs.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] != Provisioner || pv.DeletionTimestamp != nil ||
		pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return 0, nil
	}
	node, dir := nodeOf(pv), ""
	if pv.Spec.HostPath != nil {
		dir = pv.Spec.HostPath.Path
	}
	if _, err := c.Nodes.Get(node); apierrors.IsNotFound(err) || dir == "" {
		c.Recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "node %q is gone: its directory %s was not removed", node, dir)
	} else {
		params := helperParams{path: path.Dir(dir), image: DefaultHelperImage}
		if sc, err := c.Classes.Get(pv.Spec.StorageClassName); err == nil {
			if p, err := parameters(sc); err == nil {
				params.image = p.image
			}
		}
		done, err := c.runHelper(ctx, "delete-"+pv.Name, node, params, dir, `rm -rf "$VOL_DIR"`, nil)
		if err != nil {
			c.Recorder.Eventf(pv, corev1.EventTypeWarning, "VolumeFailedDelete", "%v", err)
			return 0, err
		}
		if !done {
			return poll, nil
		}
	}
	err = c.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	return 0, nil
}

type helperParams struct{ path, image string }

// parameters reads a class's parameters, refusing ones it does not know, as provisioners do.
func parameters(sc *storagev1.StorageClass) (helperParams, error) {
	p := helperParams{path: DefaultPath, image: DefaultHelperImage}
	for k, v := range sc.Parameters {
		switch k {
		case ParamPath:
			if !path.IsAbs(v) || path.Clean(v) == "/" {
				return p, fmt.Errorf("invalid StorageClass parameter %s=%q: an absolute directory other than /", k, v)
			}
			p.path = path.Clean(v)
		case ParamHelperImage:
			p.image = v
		default:
			return p, fmt.Errorf("invalid StorageClass parameter %q: %s knows %s and %s", k, Provisioner, ParamPath, ParamHelperImage)
		}
	}
	return p, nil
}

// runHelper runs script in a pod on node with dir's parent mounted and VOL_DIR set to dir:
// done once it succeeded (the pod is then deleted); an error when it failed. started (nil:
// nothing) is called when the pod is made.
func (c *Controller) runHelper(ctx context.Context, name, node string, p helperParams, dir, script string, started func()) (bool, error) {
	pods := c.Client.CoreV1().Pods(helperNamespace)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = pods.Create(ctx, helperPod(name, node, p.image, path.Dir(dir), dir, script), metav1.CreateOptions{})
		if err == nil && started != nil {
			started()
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return true, c.deleteHelper(ctx, pod)
	case corev1.PodFailed:
		msg := pod.Status.Message
		for _, s := range pod.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil {
				msg = fmt.Sprintf("exit code %d %s", t.ExitCode, t.Message)
			}
		}
		if err := c.deleteHelper(ctx, pod); err != nil {
			return false, err
		}
		return false, fmt.Errorf("helper pod %s/%s on node %s failed: %s", helperNamespace, name, node, msg)
	}
	return false, nil
}

func (c *Controller) deleteHelper(ctx context.Context, pod *corev1.Pod) error {
	err := c.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func helperPod(name, node, image, parent, dir, script string) *corev1.Pod {
	dirType := corev1.HostPathDirectoryOrCreate
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: helperNamespace, Labels: map[string]string{"app.kubernetes.io/managed-by": Name}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: new(bool),
			Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "helper", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sh", "-c", script},
				Env:          []corev1.EnvVar{{Name: "VOL_DIR", Value: dir}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: parent}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: parent, Type: &dirType}}}},
		},
	}
}
