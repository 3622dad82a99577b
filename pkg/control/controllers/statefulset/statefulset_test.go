package statefulset_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	endpointsliceutil "k8s.io/endpointslice/util"
)

// kubelet makes every bound pod Running and Ready after a moment, and records the order of
// pod additions and deletions, and which pods were ready when each was added.
type kubelet struct {
	mu      sync.Mutex
	ready   map[string]bool
	events  []string // "+web-0", "-web-2"
	readyAt map[string][]string
}

func startKubelet(t *testing.T, c kubernetes.Interface) *kubelet {
	k := &kubelet{ready: map[string]bool{}, readyAt: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactory(c, 0)
	run := func(pod *corev1.Pod) {
		if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodRunning || pod.DeletionTimestamp != nil {
			return
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, _ = controllertest.MarkReady(ctx, c, pod)
		}()
	}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			pod := obj.(*corev1.Pod)
			k.mu.Lock()
			k.events = append(k.events, "+"+pod.Name)
			var ready []string
			for n, r := range k.ready {
				if r {
					ready = append(ready, n)
				}
			}
			k.readyAt[pod.Name] = ready
			k.mu.Unlock()
			run(pod)
		},
		UpdateFunc: func(_, obj any) {
			pod := obj.(*corev1.Pod)
			// Ready as the controller sees it, in the order of the API's events: noted
			// after MarkReady returned, a pod created in between would seem early.
			if endpointsliceutil.IsPodReady(pod) {
				k.mu.Lock()
				k.ready[pod.Name] = true
				k.mu.Unlock()
			}
			if pod.DeletionTimestamp != nil { // the containers stopped: the pod goes
				zero := int64(0)
				_ = c.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
				return
			}
			run(pod)
		},
		DeleteFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				k.mu.Lock()
				k.events = append(k.events, "-"+pod.Name)
				k.ready[pod.Name] = false
				k.mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	return k
}

// rolledOut starts a control plane with the Ready node-1 and its fake kubelet, applies
// manifests in order and waits for the rollout of StatefulSet name.
func rolledOut(t *testing.T, name string, manifests ...string) (*controlplanetest.Cluster, *kubelet) {
	cl := controlplanetest.Start(t, nil)
	cl.CreateReadyNode(t, "node-1", 20, nil)
	k := startKubelet(t, cl.Client)
	for _, m := range manifests {
		cl.MustKubectl(t, m, "apply", "-f", "-")
	}
	cl.MustKubectl(t, "", "rollout", "status", "sts/"+name, "--timeout=60s")
	return cl, k
}

// statefulSet is a StatefulSet of replicas pods, labelled app=<name>.
func statefulSet(name string, replicas int) string {
	return strings.ReplaceAll(fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: NAME}
spec:
  serviceName: NAME
  replicas: %d
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: c, image: localhost/minik8s/netexec:v1}]
`, replicas), "NAME", name)
}

var web = statefulSet("web", 3) + `  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// volumes are three hostPath PVs the claims of web bind to.
const volumes = `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-0}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/pv-0}}}
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-1}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/pv-1}}}
- {apiVersion: v1, kind: PersistentVolume, metadata: {name: pv-2}, spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/pv-2}}}
`

func TestStatefulSetOrderedPodsClaimsAndPartition(t *testing.T) {
	ctx := context.Background()
	// The claims need volumes to bind to: the scheduler holds pods with unbound claims.
	cl, k := rolledOut(t, "web", volumes, web)
	k.mu.Lock()
	events := strings.Join(k.events, " ")
	web1ReadyBefore, web2ReadyBefore := strings.Join(k.readyAt["web-1"], ","), k.readyAt["web-2"]
	k.mu.Unlock()
	if events != "+web-0 +web-1 +web-2" || !strings.Contains(web1ReadyBefore, "web-0") || len(web2ReadyBefore) != 2 {
		t.Errorf("OrderedReady: events %q; ready when web-1 came: %q, when web-2 came: %v", events, web1ReadyBefore, web2ReadyBefore)
	}
	for _, claim := range []string{"www-web-0", "www-web-1", "www-web-2"} {
		if _, err := cl.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{}); err != nil {
			t.Errorf("claim %s: %v", claim, err)
		}
	}
	pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil || pod.Spec.Hostname != "web-1" || pod.Spec.Subdomain != "web" || pod.Labels["statefulset.kubernetes.io/pod-name"] != "web-1" ||
		pod.Labels["apps.kubernetes.io/pod-index"] != "1" || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "www-web-1" ||
		pod.GenerateName != "web-" { // kube's GetPodFromTemplate gives every pod one
		t.Errorf("pod web-1: %v %+v", err, pod)
	}
	// A pod names its revision, as kube's StatefulSet pods do (the conformance tests compare
	// the label with status.currentRevision).
	sts, err := cl.Client.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["controller-revision-hash"] != sts.Status.CurrentRevision {
		t.Errorf("pod web-1 of revision %q, the set's current revision %q", pod.Labels["controller-revision-hash"], sts.Status.CurrentRevision)
	}
	// The collisionCount 0 the status carries (as kube's) does not rename the revision.
	revs, err := cl.Client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(revs.Items) != 1 || sts.Status.CollisionCount == nil || *sts.Status.CollisionCount != 0 {
		t.Errorf("one template: %d revisions (%v), collisionCount %v; want 1 and 0", len(revs.Items), err, sts.Status.CollisionCount)
	}

	// Scale down goes from the top, one at a time.
	cl.MustKubectl(t, "", "scale", "sts/web", "--replicas=1")
	controllertest.Until(t, "scale down to web-0", 30*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return strings.HasSuffix(strings.Join(k.events, " "), "-web-2 -web-1")
	})
	if _, err := cl.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "www-web-2", metav1.GetOptions{}); err != nil {
		t.Errorf("claims outlive their pods on scale down: %v", err)
	}

	// A partitioned rolling update changes only the ordinals at or above the partition.
	cl.MustKubectl(t, "", "scale", "sts/web", "--replicas=3")
	cl.MustKubectl(t, "", "rollout", "status", "sts/web", "--timeout=60s")
	cl.MustKubectl(t, "", "patch", "sts", "web", "--type=merge", "-p", `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}}`)
	cl.MustKubectl(t, "", "set", "env", "sts/web", "GENERATION=2")
	controllertest.Until(t, "web-2 updated, web-0 and web-1 kept", 30*time.Second, func() bool {
		envs := map[string]int{}
		for _, name := range []string{"web-0", "web-1", "web-2"} {
			p, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				return false
			}
			envs[name] = len(p.Spec.Containers[0].Env)
		}
		return envs["web-0"] == 0 && envs["web-1"] == 0 && envs["web-2"] == 1
	})
	// The status follows the pods a moment later (its write comes after theirs).
	controllertest.Until(t, "the status of the partitioned update: 1 updated, 3 ready, two revisions", 30*time.Second, func() bool {
		sts, err := cl.Client.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && sts.Status.UpdatedReplicas == 1 && sts.Status.CurrentRevision != sts.Status.UpdateRevision && sts.Status.ReadyReplicas == 3
	})
	history := cl.MustKubectl(t, "", "rollout", "history", "sts/web")
	if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
		t.Errorf("rollout history:\n%s", history)
	}
	out := cl.MustKubectl(t, "", "get", "sts", "web")
	if row := strings.Join(strings.Fields(out), " "); !strings.Contains(row, "web 3/3") {
		t.Errorf("kubectl get sts:\n%s", out)
	}
}

// TestStatefulSetOrdinalsStart: spec.ordinals.start numbers the pods and their claims from
// it, as kube's (GA since v1.31); moving it makes the new ordinals' pods and removes the old
// ones, highest first, after the new ones are ready.
func TestStatefulSetOrdinalsStart(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	cl.CreateReadyNode(t, "node-1", 20, nil)
	k := startKubelet(t, cl.Client)
	cl.MustKubectl(t, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  ordinals: {start: 5}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: localhost/minik8s/netexec:v1}]
`, "apply", "-f", "-")
	cl.MustKubectl(t, "", "rollout", "status", "sts/db", "--timeout=60s")
	for _, name := range []string{"db-5", "db-6"} {
		pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s: %v", name, err)
		} else if index := pod.Labels["apps.kubernetes.io/pod-index"]; pod.Spec.Hostname != name || index != strings.TrimPrefix(name, "db-") {
			t.Errorf("pod %s: hostname %q, pod-index %q", name, pod.Spec.Hostname, index)
		}
	}
	cl.MustKubectl(t, "", "patch", "sts", "db", "--type=merge", "-p", `{"spec":{"ordinals":{"start":0}}}`)
	controllertest.Until(t, "db-0 and db-1 made, db-6 and db-5 removed", 30*time.Second, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		return strings.HasSuffix(strings.Join(k.events, " "), "+db-0 +db-1 -db-6 -db-5")
	})
}

// TestStatefulSetClaimRetentionPolicy: whenScaled Delete hands a scaled-down pod's claims to
// the pod, so they go with it; whenDeleted Delete makes the set their controller, so they go
// with the set (kube's owner references; GA since v1.32). Retain, the default, keeps them
// (TestStatefulSetOrderedPodsClaimsAndPartition).
func TestStatefulSetClaimRetentionPolicy(t *testing.T) {
	ctx := context.Background()
	cl, _ := rolledOut(t, "web", volumes, strings.Replace(web, "  replicas: 3\n", "  replicas: 2\n  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete, whenDeleted: Delete}\n", 1))
	sts, err := cl.Client.AppsV1().StatefulSets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimGone := func(name string) func() bool {
		return func() bool {
			_, err := cl.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}
	}
	controllertest.Until(t, "www-web-0 controlled by the set", 30*time.Second, func() bool {
		claim, err := cl.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "www-web-0", metav1.GetOptions{})
		ref := metav1.GetControllerOf(claim)
		return err == nil && ref != nil && ref.Kind == "StatefulSet" && ref.UID == sts.UID
	})
	cl.MustKubectl(t, "", "scale", "sts/web", "--replicas=1")
	controllertest.Until(t, "www-web-1 deleted with its pod", 60*time.Second, claimGone("www-web-1"))
	if _, err := cl.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "www-web-0", metav1.GetOptions{}); err != nil {
		t.Errorf("the claim of web-0, still in range, went too: %v", err)
	}
	cl.MustKubectl(t, "", "delete", "sts", "web")
	controllertest.Until(t, "www-web-0 deleted with the set", 60*time.Second, claimGone("www-web-0"))
}

// TestStatefulSetReplacesSucceededPod: a pod that ended with success (a node shut down
// under it, say) is replaced like a failed one, as kube's processReplica.
func TestStatefulSetReplacesSucceededPod(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	// No node: the pods stay unscheduled, and go at once when deleted.
	cl.MustKubectl(t, statefulSet("done", 1), "apply", "-f", "-")
	var first *corev1.Pod
	controllertest.Until(t, "done-0 created and marked Succeeded", 30*time.Second, func() bool {
		pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, "done-0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		pod.Status.Phase = corev1.PodSucceeded
		first, err = cl.Client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err == nil // a conflict with the scheduler's write: again
	})
	controllertest.Until(t, "done-0 made again", 30*time.Second, func() bool {
		pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, "done-0", metav1.GetOptions{})
		return err == nil && pod.UID != first.UID
	})
}

// TestStatefulSetRestoresPodIdentity: a pod whose statefulset.kubernetes.io/pod-name label
// was taken away gets it back, with kube's Event "Update Pod id-0 in StatefulSet id
// successful" (its identityMatches and UpdateStatefulPod).
func TestStatefulSetRestoresPodIdentity(t *testing.T) {
	ctx := context.Background()
	cl, _ := rolledOut(t, "id", statefulSet("id", 1))
	cl.MustKubectl(t, "", "label", "pod", "id-0", "statefulset.kubernetes.io/pod-name-", "apps.kubernetes.io/pod-index=7", "--overwrite")
	controllertest.Until(t, "the pod's identity labels restored", 30*time.Second, func() bool {
		pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, "id-0", metav1.GetOptions{})
		return err == nil && pod.Labels["statefulset.kubernetes.io/pod-name"] == "id-0" && pod.Labels["apps.kubernetes.io/pod-index"] == "0"
	})
	controllertest.Until(t, "the SuccessfulUpdate event", 10*time.Second, func() bool {
		events, err := cl.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=id,reason=SuccessfulUpdate"})
		return err == nil && len(events.Items) == 1 && events.Items[0].Message == "Update Pod id-0 in StatefulSet id successful"
	})
}

// TestStatefulSetAdoptsOrphanedPods: deleted with --cascade=orphan and applied again (the
// way to change a field that cannot be updated), a StatefulSet takes its running pods and
// its revision back instead of waiting forever to create pods whose names are taken.
func TestStatefulSetAdoptsOrphanedPods(t *testing.T) {
	ctx := context.Background()
	cl, _ := rolledOut(t, "keep", statefulSet("keep", 2))
	uids := func() string {
		var out []string
		for _, name := range []string{"keep-0", "keep-1"} {
			pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			owner := "orphan"
			if ref := metav1.GetControllerOf(pod); ref != nil {
				owner = string(ref.UID)
			}
			out = append(out, string(pod.UID)+"@"+owner)
		}
		return strings.Join(out, " ")
	}
	before := uids()
	cl.MustKubectl(t, "", "delete", "sts", "keep", "--cascade=orphan")
	controllertest.WaitFor(t, "the pods orphaned", 30*time.Second, func() (bool, string) {
		got := uids()
		return strings.Count(got, "@orphan") == 2, got
	})
	cl.MustKubectl(t, statefulSet("keep", 2), "apply", "-f", "-")
	set, err := cl.Client.AppsV1().StatefulSets("default").Get(ctx, "keep", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, pod := range strings.Fields(before) {
		uid, _, _ := strings.Cut(pod, "@")
		want = append(want, uid+"@"+string(set.UID))
	}
	controllertest.Eventually(t, "the same pods, controlled by the new set", 30*time.Second, uids, strings.Join(want, " "))
	cl.MustKubectl(t, "", "rollout", "status", "sts/keep", "--timeout=60s")
	// Its revision too is taken back, not made again (kube's adoptOrphanRevisions).
	revisions := func() string {
		list, err := cl.Client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{LabelSelector: "app=keep"})
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, r := range list.Items {
			out = append(out, fmt.Sprintf("%d@%v", r.Revision, metav1.IsControlledBy(&r, set)))
		}
		return strings.Join(out, " ")
	}
	controllertest.Eventually(t, "the revision, controlled by the new set", 30*time.Second, revisions, "1@true")
}

// TestStatefulSetReleasesRelabelledPod follows kube's conformance test "should adopt
// matching orphans and release non-matching pods": a pod relabelled out of the set's
// selector is released (its controller reference removed, the set counts it no more and
// cannot make its name again), and relabelled back it is adopted again.
func TestStatefulSetReleasesRelabelledPod(t *testing.T) {
	ctx := context.Background()
	cl, _ := rolledOut(t, "rel", statefulSet("rel", 1))
	first, err := cl.Client.CoreV1().Pods("default").Get(ctx, "rel-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := func() string {
		pod, err := cl.Client.CoreV1().Pods("default").Get(ctx, "rel-0", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		set, err := cl.Client.AppsV1().StatefulSets("default").Get(ctx, "rel", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		ref := "none"
		if r := metav1.GetControllerOf(pod); r != nil {
			ref = r.Kind + "/" + r.Name
		}
		return fmt.Sprintf("same pod %v, controller %s, set replicas %d", pod.UID == first.UID, ref, set.Status.Replicas)
	}
	cl.MustKubectl(t, "", "label", "pod", "rel-0", "app=debug", "--overwrite")
	controllertest.Eventually(t, "the relabelled pod released", 30*time.Second, owner, "same pod true, controller none, set replicas 0")
	cl.MustKubectl(t, "", "label", "pod", "rel-0", "app=rel", "--overwrite")
	controllertest.Eventually(t, "the pod adopted again", 30*time.Second, owner, "same pod true, controller StatefulSet/rel, set replicas 1")
	cl.MustKubectl(t, "", "rollout", "status", "sts/rel", "--timeout=60s")
}
