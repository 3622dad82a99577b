// Package history keeps the ControllerRevisions of a DaemonSet or StatefulSet as
// Kubernetes' controller history does: one revision per pod template (named
// <owner>-<hash>, labelled with the hash), numbered after the newest, the
// template stored as the patch `kubectl rollout undo` applies, the owner's annotations
// copied (its change-cause for `kubectl rollout history`), and old ones pruned down to
// revisionHistoryLimit, never one that pods still run.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/internal/controller/templatehash"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/utils/ptr"
)

// HashLabel is the label naming a revision on its pods, and the hash on a DaemonSet's
// revisions.
const HashLabel = appsv1.ControllerRevisionHashLabelKey

// StatefulSetHashLabel carries the hash on a StatefulSet's revisions, as kube's history
// package labels them (its ControllerRevisionHashLabel).
const StatefulSetHashLabel = "controller.kubernetes.io/hash"

// ErrHashCollision is Ensure's error when the name of the template's revision is taken by
// a revision of another template: the owner bumps its collisionCount, which changes the
// name, and tries again (kube's CreateControllerRevision, the daemonset's snapshot).
var ErrHashCollision = errors.New("hash collision")

// Owner is the set whose history is kept.
type Owner struct {
	Object   metav1.Object
	Kind     schema.GroupVersionKind
	Template *corev1.PodTemplateSpec
	Data     []byte // Template as a revision stores it (Patch)
	Hash     string // names Template's revision
	// HashLabel is the label that carries Hash on the owner's revisions.
	HashLabel string
	Limit     int // revisionHistoryLimit
	// Live are the revisions still in use, by name or hash (those of the owner's pods, a
	// StatefulSet's currentRevision): never pruned. LiveCounts: they count against Limit,
	// as in kube's DaemonSet cleanupHistory (its StatefulSet truncateHistory leaves them out).
	Live       map[string]bool
	LiveCounts bool
	// Selector, when set, claims revisions as kube's controllers do: orphans it matches are
	// adopted; revisions the owner controls that it no longer matches are released
	// (DaemonSet's ClaimControllerRevisions) or, with KeepUnmatched, only left out
	// (StatefulSet's ListRevisions).
	Selector      labels.Selector
	KeepUnmatched bool
	// Get reads the owner from the API, past the cache, before an orphan is adopted
	// (kube's canAdoptFunc); needed with Selector.
	Get controllerref.GetFunc[metav1.Object]
}

// NewOwner is the Owner of a DaemonSet: its template hashed with its collisionCount, as
// kube's daemonset controller names revisions (ComputeHash), and its revisionHistoryLimit
// (Kubernetes' default 10 when unset).
func NewOwner(obj metav1.Object, kind schema.GroupVersionKind, template *corev1.PodTemplateSpec, collisionCount, revisionHistoryLimit *int32) (Owner, error) {
	data, err := Patch(template)
	return Owner{Object: obj, Kind: kind, Template: template, Data: data, Hash: templatehash.Of(template, collisionCount), HashLabel: HashLabel,
		Limit: int(ptr.Deref(revisionHistoryLimit, 10))}, err
}

// NewStatefulSetOwner is the Owner of a StatefulSet, whose revisions kube's statefulset
// controller names otherwise (newRevision): by HashControllerRevision of the revision's
// data with the collision count, 0 when the status has none; and claims them by its
// selector as its ListRevisions and adoptOrphanRevisions do.
func NewStatefulSetOwner(set *appsv1.StatefulSet) (Owner, error) {
	o, err := NewOwner(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), &set.Spec.Template, nil, set.Spec.RevisionHistoryLimit)
	if err != nil {
		return o, err
	}
	o.Hash, o.HashLabel = hashData(o.Data, ptr.Deref(set.Status.CollisionCount, 0)), StatefulSetHashLabel
	o.Selector, err = metav1.LabelSelectorAsSelector(set.Spec.Selector)
	o.KeepUnmatched = true
	return o, err
}

// hashData is kube's HashControllerRevision: FNV-32 (not 32a) of the data, then of the
// collision count in decimal, as safe characters.
func hashData(data []byte, collisionCount int32) string {
	h := fnv.New32()
	h.Write(data)
	h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Ensure makes sure the current template has the newest revision and prunes old ones; it
// returns the current revision and every revision of the owner, oldest first.
func Ensure(ctx context.Context, client kubernetes.Interface, lister appslisters.ControllerRevisionLister, o Owner) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	ns := o.Object.GetNamespace()
	owned, err := claim(ctx, client, lister, o)
	if err != nil {
		return nil, nil, err
	}
	var newest int64
	var current *appsv1.ControllerRevision
	for _, r := range owned {
		newest = max(newest, r.Revision)
		// The template's revision is the newest with its data, whatever its name, as
		// kube's FindEqualRevisions and the daemonset's Match find it.
		if bytes.Equal(r.Data.Raw, o.Data) && (current == nil || r.Revision > current.Revision) {
			current = r
		}
	}
	switch {
	case current == nil:
		rev := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: o.Object.GetName() + "-" + o.Hash, Namespace: ns,
				Labels:          map[string]string{o.HashLabel: o.Hash},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(o.Object, o.Kind)}},
			Data:     runtime.RawExtension{Raw: o.Data},
			Revision: newest + 1,
		}
		// As kube's, the owner's annotations go with the revision: `kubectl rollout
		// history` reads its kubernetes.io/change-cause there.
		if a := o.Object.GetAnnotations(); len(a) > 0 {
			rev.Annotations = maps.Clone(a)
		}
		for k, v := range o.Template.Labels {
			rev.Labels[k] = v
		}
		created, err := client.AppsV1().ControllerRevisions(ns).Create(ctx, rev, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Ours, written by a sync the cache has not shown yet, or another template's.
			created, err = client.AppsV1().ControllerRevisions(ns).Get(ctx, rev.Name, metav1.GetOptions{})
			if err == nil && !bytes.Equal(created.Data.Raw, o.Data) {
				return nil, nil, fmt.Errorf("controller revision %s holds another template: %w", rev.Name, ErrHashCollision)
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("create controller revision: %w", err)
		}
		current = created
		owned = append(owned, created)
	case current.Revision < newest:
		// Back to an older template (rollout undo): it becomes the newest revision.
		updated := current.DeepCopy()
		updated.Revision = newest + 1
		if current, err = client.AppsV1().ControllerRevisions(ns).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return nil, nil, err
		}
		for i := range owned {
			if owned[i].UID == current.UID {
				owned[i] = current
			}
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].Revision < owned[j].Revision })
	// Live names a revision, or its hash (the suffix of its name) as pods made before
	// minik8s named the revision do.
	live := func(r *appsv1.ControllerRevision) bool {
		return o.Live[r.Name] || o.Live[strings.TrimPrefix(r.Name, o.Object.GetName()+"-")]
	}
	excess := -o.Limit
	for _, r := range owned {
		if r.Name != current.Name && (o.LiveCounts || !live(r)) {
			excess++
		}
	}
	if excess > 0 {
		var kept []*appsv1.ControllerRevision
		for _, r := range owned {
			if excess > 0 && r.Name != current.Name && !live(r) {
				if err := client.AppsV1().ControllerRevisions(ns).Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return nil, nil, err
				}
				excess--
				continue
			}
			kept = append(kept, r)
		}
		owned = kept
	}
	return current, owned, nil
}

// claim returns the revisions the owner controls, adopting and releasing by o.Selector.
func claim(ctx context.Context, client kubernetes.Interface, lister appslisters.ControllerRevisionLister, o Owner) ([]*appsv1.ControllerRevision, error) {
	ns := o.Object.GetNamespace()
	all, err := lister.ControllerRevisions(ns).List(labels.Everything())
	if err != nil || o.Selector == nil {
		return controllerref.Controlled(all, o.Object.GetUID()), err
	}
	if o.KeepUnmatched { // an unmatched revision is left out, so Claim neither releases nor adopts it
		all = slices.DeleteFunc(all, func(r *appsv1.ControllerRevision) bool { return !o.Selector.Matches(labels.Set(r.Labels)) })
	}
	return controllerref.Claim(ctx, o.Object, o.Kind, o.Get, o.Selector, all, func(ctx context.Context, r *appsv1.ControllerRevision, patch []byte) error {
		_, err := client.AppsV1().ControllerRevisions(ns).Patch(ctx, r.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// Patch is the revision's data for template, byte for byte as kube's controllers write it
// ({"spec":{"template":{"$patch":"replace",...}}}, keys sorted, through a generic map):
// clients such as the conformance tests find a set's current revision by comparing
// these bytes with the patch they compute from the set.
func Patch(template *corev1.PodTemplateSpec) ([]byte, error) {
	typed, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := json.Unmarshal(typed, &generic); err != nil {
		return nil, err
	}
	generic["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": generic}})
}
