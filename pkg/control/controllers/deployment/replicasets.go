package deployment

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/internal/controller/templatehash"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// The annotations Kubernetes' deployment controller and kubectl rollout read.
const (
	revisionAnnotation        = "deployment.kubernetes.io/revision"
	revisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	desiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	maxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
)

// maxRevisionHistoryChars bounds revision-history as Kubernetes' controller does: the
// oldest revisions go first.
const maxRevisionHistoryChars = 2000

// notCopied are the Deployment annotations a ReplicaSet does not inherit.
var notCopied = map[string]bool{
	corev1.LastAppliedConfigAnnotation: true, revisionAnnotation: true, desiredReplicasAnnotation: true,
	maxReplicasAnnotation: true, revisionHistoryAnnotation: true,
}

// rollout is one sync of one Deployment: d and the ReplicaSets it controls, kept up to date
// as the sync writes them.
type rollout struct {
	c   *Controller
	d   *appsv1.Deployment
	all []*appsv1.ReplicaSet
}

// sameTemplate compares two templates ignoring the pod-template-hash label.
func sameTemplate(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

func revision(rs *appsv1.ReplicaSet) int64 {
	v, _ := strconv.ParseInt(rs.Annotations[revisionAnnotation], 10, 64)
	return v
}

func replicas(rs *appsv1.ReplicaSet) int32 { return ptr.Deref(rs.Spec.Replicas, 0) }

// byAge sorts ReplicaSets oldest first (name breaks ties).
func byAge(list []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := append([]*appsv1.ReplicaSet(nil), list...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].Name < out[j].Name
		}
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
	})
	return out
}

// split finds the new ReplicaSet (the oldest whose template is d's) and the old ones.
func (r *rollout) split() (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range byAge(r.all) {
		if newRS == nil && sameTemplate(&rs.Spec.Template, &r.d.Spec.Template) {
			newRS = rs
		} else {
			old = append(old, rs)
		}
	}
	return newRS, old
}

// active are the ReplicaSets that still ask for pods.
func active(list []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range list {
		if replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// replicaSets returns the new ReplicaSet (created when create is set and there is none)
// and the old ones, and keeps the revision annotations of both the new ReplicaSet and d.
func (r *rollout) replicaSets(ctx context.Context, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS, old := r.split()
	var maxOld int64
	for _, rs := range old {
		maxOld = max(maxOld, revision(rs))
	}
	next := strconv.FormatInt(maxOld+1, 10)
	switch {
	case newRS != nil:
		updated := newRS.DeepCopy()
		changed := r.setReplicaSetAnnotations(updated, revision(newRS) <= maxOld, next)
		if updated.Spec.MinReadySeconds != r.d.Spec.MinReadySeconds {
			updated.Spec.MinReadySeconds, changed = r.d.Spec.MinReadySeconds, true
		}
		if changed {
			var err error
			if updated, err = r.c.client.AppsV1().ReplicaSets(updated.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return nil, nil, err
			}
			r.replace(updated)
			newRS = updated
		}
		if cond := getCondition(r.d.Status, appsv1.DeploymentProgressing); r.d.Spec.ProgressDeadlineSeconds != nil && cond == nil {
			setCondition(&r.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, r.c.clock.Now(),
				"FoundNewReplicaSet", fmt.Sprintf("Found new replica set %q", newRS.Name)))
		}
	case create:
		var err error
		if newRS, err = r.createReplicaSet(ctx, next); err != nil || newRS == nil {
			return nil, nil, err
		}
	default:
		return nil, old, nil
	}
	if r.d.Annotations[revisionAnnotation] != newRS.Annotations[revisionAnnotation] {
		d := r.d.DeepCopy()
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[revisionAnnotation] = newRS.Annotations[revisionAnnotation]
		// Through status, as kube's controller writes it: the revision is not a change of intent
		// and must not bump the Deployment's generation.
		updated, err := r.c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, err
		}
		updated.Status = r.d.Status // conditions set in this sync and not yet written
		r.d = updated
	}
	return newRS, old, nil
}

// setReplicaSetAnnotations gives rs d's annotations and the revision when bump is set; it
// reports whether anything changed. The replica annotations are scaleTo's (and a new
// ReplicaSet's): proportional scaling reads the size they held before.
func (r *rollout) setReplicaSetAnnotations(rs *appsv1.ReplicaSet, bump bool, rev string) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range r.d.Annotations {
		if !notCopied[k] && rs.Annotations[k] != v {
			rs.Annotations[k], changed = v, true
		}
	}
	if bump || rs.Annotations[revisionAnnotation] == "" {
		if old := rs.Annotations[revisionAnnotation]; old != rev {
			if old != "" {
				appendRevisionHistory(rs, old)
			}
			rs.Annotations[revisionAnnotation], changed = rev, true
		}
	}
	return changed
}

// appendRevisionHistory records in rs's revision-history the revision it leaves (a
// rollback reuses an old ReplicaSet under a new revision), as Kubernetes' controller does.
func appendRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	var history []string
	if h := rs.Annotations[revisionHistoryAnnotation]; h != "" {
		history = strings.Split(h, ",")
	}
	history = append(history, old)
	for len(history) > 1 && len(strings.Join(history, ",")) > maxRevisionHistoryChars {
		history = history[1:]
	}
	rs.Annotations[revisionHistoryAnnotation] = strings.Join(history, ",")
}

// setReplicasAnnotations records on rs the Deployment's size and its size with surge, which
// later syncs compare to notice scaling.
func (r *rollout) setReplicasAnnotations(rs *appsv1.ReplicaSet) bool {
	want := ptr.Deref(r.d.Spec.Replicas, 1)
	desired, most := strconv.Itoa(int(want)), strconv.Itoa(int(want+maxSurge(r.d)))
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	if rs.Annotations[desiredReplicasAnnotation] == desired && rs.Annotations[maxReplicasAnnotation] == most {
		return false
	}
	rs.Annotations[desiredReplicasAnnotation], rs.Annotations[maxReplicasAnnotation] = desired, most
	return true
}

// createReplicaSet makes the ReplicaSet of d's current template. A namesake with another
// template is a hash collision: the collision count goes up and the next sync tries again.
func (r *rollout) createReplicaSet(ctx context.Context, rev string) (*appsv1.ReplicaSet, error) {
	d := r.d
	hash := templatehash.Of(&d.Spec.Template, d.Status.CollisionCount)
	template := *d.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: replicaSetName(d.Name, hash), Namespace: d.Namespace, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: template},
	}
	*rs.Spec.Replicas = newReplicaSetSize(d, r.all, nil)
	r.setReplicaSetAnnotations(rs, true, rev)
	r.setReplicasAnnotations(rs)
	created, err := r.c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := r.c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == d.UID && sameTemplate(&existing.Spec.Template, &d.Spec.Template) {
			r.replace(existing) // ours, created by an earlier sync our cache had not seen
			return existing, nil
		}
		d.Status.CollisionCount = new(int32)
		*d.Status.CollisionCount = ptr.Deref(r.d.Status.CollisionCount, 0) + 1
		if _, err := r.c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("replica set %s exists with another template: hash collision, retrying with collisionCount %d", rs.Name, *d.Status.CollisionCount)
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil, err // every create fails from now on: nothing to tell
	}
	if err != nil {
		const reason = "ReplicaSetCreateError" // kube's FailedRSCreateReason
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if d.Spec.ProgressDeadlineSeconds != nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, r.c.clock.Now(), reason, msg))
			// The create's error is the one to return; this write is best effort, as kube's.
			_, _ = r.c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}
		r.c.recorder.Event(d, corev1.EventTypeWarning, reason, msg)
		return nil, err
	}
	if n := replicas(created); n > 0 {
		r.c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	if d.Spec.ProgressDeadlineSeconds != nil {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, r.c.clock.Now(),
			"NewReplicaSetCreated", fmt.Sprintf("Created new replica set %q", created.Name)))
	}
	r.all = append(r.all, created)
	return created, nil
}

// replicaSetName is <deployment>-<hash>, the Deployment's name cut so that the whole fits
// in a name's 253 characters, as kube's generateReplicaSetName.
func replicaSetName(deployment, hash string) string {
	if most := validation.DNS1123SubdomainMaxLength - 1 - len(hash); len(deployment) > most && most > 0 {
		deployment = deployment[:most]
	}
	return deployment + "-" + hash
}

// replace puts a ReplicaSet written in this sync in place of its older copy.
func (r *rollout) replace(rs *appsv1.ReplicaSet) {
	for i, old := range r.all {
		if old.UID == rs.UID {
			r.all[i] = rs
			return
		}
	}
	r.all = append(r.all, rs)
}

// scaleTo sets rs's size (and the replica annotations) and says whether the size changed.
func (r *rollout) scaleTo(ctx context.Context, rs *appsv1.ReplicaSet, size int32) (bool, error) {
	updated := rs.DeepCopy()
	sizeChanged := replicas(rs) != size
	annotationsChanged := r.setReplicasAnnotations(updated)
	if !sizeChanged && !annotationsChanged {
		return false, nil
	}
	updated.Spec.Replicas = &size
	updated, err := r.c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return false, err
	}
	r.replace(updated)
	if sizeChanged {
		direction := "up"
		if size < replicas(rs) {
			direction = "down"
		}
		r.c.recorder.Eventf(r.d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", direction, rs.Name, replicas(rs), size)
	}
	return sizeChanged, nil
}

// cleanup deletes the old ReplicaSets of the oldest revisions beyond revisionHistoryLimit,
// as kube's cleanupDeployment: every old one not being deleted counts, but only those
// without pods (and whose size the ReplicaSet controller has seen) are deleted.
func (r *rollout) cleanup(ctx context.Context, old []*appsv1.ReplicaSet) error {
	limit := int(ptr.Deref(r.d.Spec.RevisionHistoryLimit, 10))
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	if len(alive) <= limit {
		return nil
	}
	sort.SliceStable(alive, func(i, j int) bool { return revision(alive[i]) < revision(alive[j]) })
	for _, rs := range alive[:len(alive)-limit] {
		if replicas(rs) != 0 || rs.Status.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := r.c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
