package deployment_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// fakeKubelet plays every node for namespace: a new pod runs and turns Ready a moment
// later, unless its image says it never will.
func fakeKubelet(t *testing.T, c kubernetes.Interface, namespace string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(namespace))
	pods := factory.Core().V1().Pods().Informer()
	ready := func(obj any) {
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase == corev1.PodRunning || pod.DeletionTimestamp != nil || strings.Contains(pod.Spec.Containers[0].Image, "never-ready") {
			return
		}
		go func() {
			time.Sleep(100 * time.Millisecond)
			_, _ = controllertest.MarkReady(ctx, c, pod)
		}()
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: ready}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
}

// readyPods counts the pods of app in namespace that are Ready and not being deleted.
func readyPods(ctx context.Context, c kubernetes.Interface, namespace, app string) (int, map[string]int, error) {
	list, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": app}.String()})
	if err != nil {
		return 0, nil, err
	}
	n, images := 0, map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		images[p.Spec.Containers[0].Image]++
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n, images, nil
}

// sample watches app's pods during a rollout and reports the fewest ready ones seen and
// whether two images ever ran side by side.
func sample(t *testing.T, c kubernetes.Interface, namespace, app string) (stop func() (minReady int, mixed bool)) {
	ctx, cancel := context.WithCancel(context.Background())
	var least atomic.Int64
	var both atomic.Bool
	least.Store(1 << 30)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if n, images, err := readyPods(ctx, c, namespace, app); err == nil {
				least.Store(min(least.Load(), int64(n)))
				if len(images) > 1 {
					both.Store(true)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() (int, bool) {
		cancel()
		<-done
		return int(least.Load()), both.Load()
	}
}

func replicaSetsOf(t *testing.T, c kubernetes.Interface, namespace, app string) map[string]*appsv1.ReplicaSet {
	t.Helper()
	list, err := c.AppsV1().ReplicaSets(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labels.Set{"app": app}.String()})
	if err != nil {
		t.Fatal(err)
	}
	byRevision := map[string]*appsv1.ReplicaSet{}
	for i := range list.Items {
		rs := &list.Items[i]
		byRevision[rs.Annotations["deployment.kubernetes.io/revision"]] = rs
	}
	return byRevision
}

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: "localhost/minik8s/netexec:v1"}]
`

// The tests share the package's miniapi, each in a namespace of its own.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

func TestRollingUpdateUndoAndStatus(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	fakeKubelet(t, cl.Client, cl.Namespace)
	cl.MustKubectl(t, webDeployment, "apply", "-f", "-")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	out := cl.MustKubectl(t, "", "get", "deploy", "web")
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "web 3/3 3 3") {
		t.Errorf("kubectl get deploy after the rollout:\n%s", out)
	}
	// The controller's revision annotation is written through status, as kube's is: a
	// Deployment nobody edited stays at generation 1.
	if g := cl.MustKubectl(t, "", "get", "deploy", "web", "-o", "jsonpath={.metadata.generation} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"); g != "1 1" {
		t.Errorf("generation and revision after the first rollout: %q, want \"1 1\"", g)
	}

	stop := sample(t, cl.Client, cl.Namespace, "web")
	cl.MustKubectl(t, "", "set", "image", "deployment/web", "c=localhost/minik8s/netexec:v2")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	if least, _ := stop(); least < 3 {
		t.Errorf("ready pods fell to %d during a maxUnavailable=0 rollout, want never below 3", least)
	}
	sets := replicaSetsOf(t, cl.Client, cl.Namespace, "web")
	if len(sets) != 2 || *sets["1"].Spec.Replicas != 0 || *sets["2"].Spec.Replicas != 3 {
		t.Fatalf("after the rollout: replica sets by revision %v", summary(sets))
	}
	if sets["2"].Spec.Template.Spec.Containers[0].Image != "localhost/minik8s/netexec:v2" || !strings.HasPrefix(sets["2"].Name, "web-") ||
		sets["2"].Labels["pod-template-hash"] == "" || !strings.HasSuffix(sets["2"].Name, sets["2"].Labels["pod-template-hash"]) {
		t.Errorf("new replica set %s labels %v", sets["2"].Name, sets["2"].Labels)
	}
	events := cl.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=Deployment")
	for _, want := range []string{"ScalingReplicaSet", "Scaled up replica set " + sets["2"].Name + " from 0 to 1", "Scaled down replica set " + sets["1"].Name} {
		if !strings.Contains(events, want) {
			t.Errorf("deployment events lack %q:\n%s", want, events)
		}
	}
	history := cl.MustKubectl(t, "", "rollout", "history", "deployment/web")
	if !strings.Contains(history, "1 ") || !strings.Contains(history, "2 ") {
		t.Errorf("rollout history:\n%s", history)
	}

	// Undo returns to revision 1's ReplicaSet (which becomes revision 3).
	cl.MustKubectl(t, "", "rollout", "undo", "deployment/web")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	sets = replicaSetsOf(t, cl.Client, cl.Namespace, "web")
	if len(sets) != 2 || sets["3"] == nil || sets["3"].Spec.Template.Spec.Containers[0].Image != "localhost/minik8s/netexec:v1" || *sets["3"].Spec.Replicas != 3 {
		t.Fatalf("after undo: %v", summary(sets))
	}
	// The revisions a ReplicaSet had before are kept in revision-history, as Kubernetes' do.
	if h := sets["3"].Annotations["deployment.kubernetes.io/revision-history"]; h != "1" {
		t.Errorf("revision 3's revision-history %q, want \"1\"", h)
	}
	cl.MustKubectl(t, "", "rollout", "undo", "deployment/web", "--to-revision=2")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	d, err := cl.Client.AppsV1().Deployments(cl.Namespace).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "localhost/minik8s/netexec:v2" || d.Annotations["deployment.kubernetes.io/revision"] != "4" {
		t.Errorf("after undo --to-revision=2: image %s, revision %s", img, d.Annotations["deployment.kubernetes.io/revision"])
	}
	if h := replicaSetsOf(t, cl.Client, cl.Namespace, "web")["4"].Annotations["deployment.kubernetes.io/revision-history"]; h != "2" {
		t.Errorf("revision 4's revision-history %q, want \"2\"", h)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && (c.Status != corev1.ConditionTrue || c.Reason != "NewReplicaSetAvailable") {
			t.Errorf("Progressing condition %+v after a complete rollout", c)
		}
		if c.Type == appsv1.DeploymentAvailable && c.Reason != "MinimumReplicasAvailable" {
			t.Errorf("Available condition %+v", c)
		}
	}
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != 3 || d.Status.AvailableReplicas != 3 || d.Status.UnavailableReplicas != 0 {
		t.Errorf("status %+v", d.Status)
	}
}

func TestRecreatePauseAndHistoryLimit(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	fakeKubelet(t, cl.Client, cl.Namespace)
	manifest := strings.NewReplacer("name: web", "name: db", "app: web", "app: db",
		"type: RollingUpdate\n    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}", "type: Recreate",
		"replicas: 3", "replicas: 2\n  revisionHistoryLimit: 1").Replace(webDeployment)
	cl.MustKubectl(t, manifest, "apply", "-f", "-")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/db", "--timeout=60s")

	stop := sample(t, cl.Client, cl.Namespace, "db")
	cl.MustKubectl(t, "", "set", "image", "deployment/db", "c=localhost/minik8s/netexec:v2")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/db", "--timeout=60s")
	if _, mixed := stop(); mixed {
		t.Errorf("Recreate ran old and new pods side by side")
	}

	// Paused: a new template rolls nothing out, a new size still applies.
	cl.MustKubectl(t, "", "rollout", "pause", "deployment/db")
	cl.MustKubectl(t, "", "set", "image", "deployment/db", "c=localhost/minik8s/netexec:v3")
	cl.MustKubectl(t, "", "scale", "deployment/db", "--replicas=4")
	controllertest.WaitFor(t, "paused deployment scaled to 4 on its current template", 30*time.Second, func() (bool, string) {
		n, images, err := readyPods(context.Background(), cl.Client, cl.Namespace, "db")
		return err == nil && n == 4 && images["localhost/minik8s/netexec:v2"] == 4, fmt.Sprint(n, images, err)
	})
	if sets := replicaSetsOf(t, cl.Client, cl.Namespace, "db"); sets["3"] != nil {
		t.Errorf("a paused deployment created a replica set: %v", summary(sets))
	}
	cl.MustKubectl(t, "", "rollout", "resume", "deployment/db")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/db", "--timeout=60s")
	// revisionHistoryLimit 1: the new set and one old one are kept.
	controllertest.WaitFor(t, "history limited to one old replica set", 30*time.Second, func() (bool, string) {
		sets := replicaSetsOf(t, cl.Client, cl.Namespace, "db")
		return len(sets) == 2 && sets["3"] != nil && sets["2"] != nil, fmt.Sprint(summary(sets))
	})
}

func TestProgressDeadlineAndBadSelector(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	fakeKubelet(t, cl.Client, cl.Namespace)
	manifest := strings.NewReplacer("replicas: 3", "replicas: 2\n  progressDeadlineSeconds: 2", "netexec:v1", "never-ready:v1").Replace(webDeployment)
	cl.MustKubectl(t, manifest, "apply", "-f", "-")
	out, err := cl.Kubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	if err == nil || !strings.Contains(out, "exceeded its progress deadline") {
		t.Errorf("rollout status of a stuck deployment: err %v\n%s", err, out)
	}
	desc := cl.MustKubectl(t, "", "describe", "deployment", "web")
	if !strings.Contains(desc, "ProgressDeadlineExceeded") {
		t.Errorf("describe lacks ProgressDeadlineExceeded:\n%s", desc)
	}
	// Kubernetes' deployment controller only sets the condition: it records no Event for
	// the deadline (its Events are ScalingReplicaSet, rollback and SelectingAll ones).
	time.Sleep(2 * time.Second) // events are written asynchronously
	events, err := cl.Client.CoreV1().Events(cl.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Deployment" && e.Reason == "ProgressDeadlineExceeded" {
			t.Errorf("unexpected Event %s %q on the deployment: Kubernetes records none for a passed deadline", e.Reason, e.Message)
		}
	}

	bad := strings.Replace(webDeployment, "selector: {matchLabels: {app: web}}", "selector: {matchLabels: {app: other}}", 1)
	bad = strings.Replace(bad, "name: web", "name: bad", 1)
	out, err = cl.Kubectl(t, bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "selector") || !strings.Contains(out, "does not match template") {
		t.Errorf("a selector that misses its template must be refused: err %v\n%s", err, out)
	}
}

func summary(sets map[string]*appsv1.ReplicaSet) map[string]string {
	out := map[string]string{}
	for rev, rs := range sets {
		out[rev] = fmt.Sprintf("%s replicas=%d image=%s", rs.Name, *rs.Spec.Replicas, rs.Spec.Template.Spec.Containers[0].Image)
	}
	return out
}

// A Deployment sums its ReplicaSets' terminatingReplicas (Kubernetes v1.36): a pod kept
// terminating by a finalizer shows as 1 until it is gone.
func TestDeploymentTerminatingReplicas(t *testing.T) {
	t.Parallel()
	cl := controlplanetest.Shared(t)
	fakeKubelet(t, cl.Client, cl.Namespace)
	cl.MustKubectl(t, webDeployment, "apply", "-f", "-")
	cl.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
	terminating := func(want string) {
		t.Helper()
		controllertest.Eventually(t, "deployment terminatingReplicas", 20*time.Second, func() string {
			return cl.MustKubectl(t, "", "get", "deploy", "web", "-o", "jsonpath={.status.terminatingReplicas}")
		}, want)
	}
	terminating("0")
	pod := strings.TrimPrefix(strings.Fields(cl.MustKubectl(t, "", "get", "pods", "-l", "app=web", "-o", "name"))[0], "pod/")
	release := controllertest.HoldTerminating(t, cl.Client, cl.Namespace, pod)
	terminating("1")
	release()
	terminating("0")
}
