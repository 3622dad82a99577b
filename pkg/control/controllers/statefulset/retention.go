package statefulset

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The persistentVolumeClaimRetentionPolicy works through the claims' owner references, as in
// Kubernetes: whenDeleted Delete makes the set their controller (the garbage collector
// deletes them with it), whenScaled Delete makes a scaled-down pod theirs (they go with it).

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

func claimName(set *appsv1.StatefulSet, tmpl *corev1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", tmpl.Name, set.Name, ordinal)
}

func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	if p := set.Spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		return *p
	}
	return appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType}
}

// refersTo: ref names obj (kind and name, whatever its UID).
func refersTo(ref metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return ref.APIVersion == gvk.GroupVersion().String() && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// staleRef: claim refers to a former namesake of obj (a pod or set deleted and made again),
// whose garbage collection is under way.
func staleRef(claim *corev1.PersistentVolumeClaim, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for _, ref := range claim.OwnerReferences {
		if refersTo(ref, obj, gvk) {
			return ref.UID != obj.GetUID()
		}
	}
	return false
}

// otherController: a controller other than set and pod owns claim; kube then leaves the
// claim to it and only takes its own references away.
func otherController(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	p := retentionPolicy(set)
	if p.WhenDeleted == appsv1.RetainPersistentVolumeClaimRetentionPolicyType && p.WhenScaled == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return false
	}
	for _, ref := range claim.OwnerReferences {
		switch {
		case refersTo(ref, set, kind):
			if ref.UID != set.UID {
				return true
			}
		case refersTo(ref, pod, podKind):
			if ref.UID != pod.UID {
				return true
			}
		case ref.Controller != nil && *ref.Controller:
			return true
		}
	}
	return false
}

// claimRefs are the owner references claim should have under set's policy, as kube's
// updateClaimOwnerRefForSetAndPod: the set while the pod is in range and whenDeleted is
// Delete, the pod once scaled down and whenScaled is Delete, and the references of others.
func claimRefs(claim *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, ref := range claim.OwnerReferences {
		if !refersTo(ref, set, kind) && !refersTo(ref, pod, podKind) {
			refs = append(refs, ref)
		}
	}
	if otherController(claim, set, pod) {
		return refs
	}
	p := retentionPolicy(set)
	switch del := appsv1.DeletePersistentVolumeClaimRetentionPolicyType; {
	case scaledDown && p.WhenScaled == del:
		refs = append(refs, *metav1.NewControllerRef(pod, podKind))
	case !scaledDown && p.WhenDeleted == del:
		refs = append(refs, *metav1.NewControllerRef(set, kind))
	}
	return refs
}

// applyRetention puts the owner references set's policy asks for on the claims of pod.
// Claims not made yet, and claims still referring to a former namesake, are left alone.
func (c *Controller) applyRetention(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, scaledDown bool) error {
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], ordinal(set, pod))
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if staleRef(claim, set, kind) || staleRef(claim, pod, podKind) {
			continue
		}
		if otherController(claim, set, pod) {
			c.recorder.Eventf(set, corev1.EventTypeWarning, "ConflictingController",
				"PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim", name)
		}
		refs := claimRefs(claim, set, pod, scaledDown)
		if equality.Semantic.DeepEqual(refs, claim.OwnerReferences) {
			continue
		}
		claim = claim.DeepCopy()
		claim.OwnerReferences = refs
		if _, err := c.client.CoreV1().PersistentVolumeClaims(set.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("could not update claim %s for delete policy ownerRefs: %w", name, err)
		}
	}
	return nil
}

// claimOfFormerPod names a claim of the pod at ordinal that still belongs to its deleted
// namesake (whenScaled Delete): the pod waits until the garbage collector has taken it,
// as kube's PodClaimIsStale, so the new pod does not start on a claim about to go.
func (c *Controller) claimOfFormerPod(set *appsv1.StatefulSet, ordinal int) (string, error) {
	if retentionPolicy(set).WhenScaled == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return "", nil
	}
	unborn := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", set.Name, ordinal)}}
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		claim, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		if staleRef(claim, unborn, podKind) {
			return name, nil
		}
	}
	return "", nil
}
