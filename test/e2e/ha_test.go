package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// haLeaseDuration is miniapi's --leader-elect-lease-duration: how long a standby waits
// for a silent leader.
const haLeaseDuration = 15 * time.Second

// haTakeoverSlack is what client-go's leader election adds to the Lease duration: a
// standby counts the duration from when it saw the last renewal (up to a retry period,
// 2 s, after it was made) and tries once a jittered retry period (up to 2 s x 2.2).
const haTakeoverSlack = 2*time.Second + 4400*time.Millisecond + time.Second

// TestHAControlPlane: on minilab up --control-planes 3, a client writing a ConfigMap every
// 100 ms through the lab's stable API address (the balancer) while the miniapi leading the
// controllers is killed with SIGKILL: the kube-controller-manager Lease moves to another
// member within the Lease duration, the client's writes come back within it and none it
// saw acknowledged is lost, a Deployment scaled during the failover converges; then with
// one etcd member stopped, no write fails; with two, a write gets a 504 Timeout, and
// writes succeed again once one of them is back.
func TestHAControlPlane(t *testing.T) {
	l := upLabWith(t, "e2e-ha", cluster.Options{Nodes: 1, ControlPlanes: 3})
	cfg, err := cluster.RESTConfig(l) // dialed from inside the lab, to the balancer's address
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 5 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	holder := func(lease string) string {
		le, err := client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
		if err != nil || le.Spec.HolderIdentity == nil {
			return ""
		}
		return *le.Spec.HolderIdentity
	}
	var leader lab.Member
	waitFor(t, "a member to lead the controllers and the scheduler", 60*time.Second, func() (bool, string) {
		kcm, sched := holder("kube-controller-manager"), holder("kube-scheduler")
		i := slices.IndexFunc(l.ControlPlanes, func(m lab.Member) bool { return strings.HasPrefix(kcm, m.Name+"_") })
		if i >= 0 {
			leader = l.ControlPlanes[i]
		}
		return i >= 0 && strings.HasPrefix(sched, "cp-"), fmt.Sprintf("holders %q and %q", kcm, sched)
	})
	t.Logf("%s leads kube-controller-manager", leader.Name)

	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "localhost/minik8s/netexec:v1"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	available := func(n int32) func() (bool, string) {
		return func() (bool, string) {
			d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Status.AvailableReplicas == n, fmt.Sprintf("%d of %d available", d.Status.AvailableReplicas, n)
		}
	}
	waitFor(t, "1 web replica available", 90*time.Second, available(1))

	w := startConfigMapWriter(client)
	time.Sleep(2 * time.Second)

	// kill -9 of the leading miniapi: no goodbye, its Lease is left to expire.
	current, err := lab.Load(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(current.Processes, func(p lab.ProcessRecord) bool { return p.Name == cluster.MiniapiProcess(leader) })
	if i < 0 {
		t.Fatalf("no process %s in lab.json", cluster.MiniapiProcess(leader))
	}
	killed := time.Now()
	if err := syscall.Kill(current.Processes[i].PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", cluster.MiniapiProcess(leader), err)
	}
	waitFor(t, "the scale to 3 to be accepted", 30*time.Second, func() (bool, string) {
		_, err := client.AppsV1().Deployments("default").UpdateScale(ctx, "web",
			&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}}, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	var newLeader string
	waitFor(t, "the kube-controller-manager Lease to move to another member", haLeaseDuration+30*time.Second, func() (bool, string) {
		newLeader = holder("kube-controller-manager")
		return strings.HasPrefix(newLeader, "cp-") && !strings.HasPrefix(newLeader, leader.Name+"_"), newLeader
	})
	moved := time.Since(killed)
	t.Logf("kube-controller-manager Lease moved from %s to %s %.1f s after the kill", leader.Name, newLeader, moved.Seconds())
	if moved > haLeaseDuration+haTakeoverSlack {
		t.Errorf("the Lease moved %v after the kill, want within the Lease duration (%v) and client-go's takeover slack (%v)", moved, haLeaseDuration, haTakeoverSlack)
	}
	waitFor(t, "the kube-scheduler Lease on a live member", haLeaseDuration+30*time.Second, func() (bool, string) {
		h := holder("kube-scheduler")
		return strings.HasPrefix(h, "cp-") && !strings.HasPrefix(h, leader.Name+"_"), h
	})
	waitFor(t, "3 web replicas available after the failover", 120*time.Second, available(3))
	time.Sleep(2 * time.Second)
	acked, failures, outage := w.stop()
	t.Logf("writer: %d ConfigMaps acknowledged, %d writes failed, longest run of failures %.1f s", len(acked), failures, outage.Seconds())
	if outage > haLeaseDuration {
		t.Errorf("writes through the stable address failed for %v in a row, want at most the Lease duration %v", outage, haLeaseDuration)
	}
	checkAcknowledged(t, client, acked)

	// One etcd member of three stopped (one whose miniapi still runs): no write fails.
	survivor := l.ControlPlanes[slices.IndexFunc(l.ControlPlanes, func(m lab.Member) bool { return m.Name != leader.Name })]
	if err := current.StopProcess(cluster.EtcdProcess(survivor), 0); err != nil {
		t.Fatal(err)
	}
	w = startConfigMapWriter(client)
	time.Sleep(5 * time.Second)
	acked, failures, _ = w.stop()
	t.Logf("with %s stopped: %d ConfigMaps acknowledged, %d writes failed", cluster.EtcdProcess(survivor), len(acked), failures)
	if failures > 0 || len(acked) < 10 {
		t.Errorf("with one etcd member of three stopped, %d writes failed and %d succeeded; want none failed (last error: %v)", failures, len(acked), w.lastErr)
	}
	checkAcknowledged(t, client, acked)

	// Two of three stopped, no quorum: a write gets kube-apiserver's 504 Timeout through
	// the balancer (not a closed connection), and writes succeed again once one is back.
	second := l.ControlPlanes[slices.IndexFunc(l.ControlPlanes, func(m lab.Member) bool { return m.Name != survivor.Name })]
	if err := current.StopProcess(cluster.EtcdProcess(second), 0); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "no-quorum"}}
	patient := rest.CopyConfig(cfg) // no client-side timeout: the server's 3 s is what ends the wait
	patient.Timeout = 0
	patientClient, err := kubernetes.NewForConfig(patient)
	if err != nil {
		t.Fatal(err)
	}
	err = patientClient.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").Param("timeout", "3s").Body(cm).Do(ctx).Error()
	t.Logf("write with %s and %s stopped: %v", cluster.EtcdProcess(survivor), cluster.EtcdProcess(second), err)
	if !apierrors.IsTimeout(err) {
		t.Errorf("write without etcd quorum: %v, want kube-apiserver's 504 Timeout", err)
	}
	if _, err := current.StartProcess(cluster.EtcdProcess(second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a write once the quorum is back", 60*time.Second, func() (bool, string) {
		_, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quorum-back"}}, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := current.StartProcess(cluster.EtcdProcess(survivor)); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// configMapWriter creates a ConfigMap every 100 ms until stopped, remembering which the
// API acknowledged and the longest run of failed writes.
type configMapWriter struct {
	client   kubernetes.Interface
	done     chan struct{}
	wg       sync.WaitGroup
	acked    []string
	failures int
	outage   time.Duration
	lastErr  error
}

var writerRun int

func startConfigMapWriter(client kubernetes.Interface) *configMapWriter {
	writerRun++
	w := &configMapWriter{client: client, done: make(chan struct{})}
	prefix := fmt.Sprintf("ha-%d-", writerRun)
	w.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var failingSince time.Time
		for i := 0; ; i++ {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			name := fmt.Sprintf("%s%d", prefix, i)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"writer": "ha"}}, Data: map[string]string{"i": fmt.Sprint(i)}}
			_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
			if err == nil {
				w.acked = append(w.acked, name)
				failingSince = time.Time{}
				continue
			}
			w.failures++
			w.lastErr = err
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			w.outage = max(w.outage, time.Since(failingSince))
		}
	})
	return w
}

func (w *configMapWriter) stop() (acked []string, failures int, outage time.Duration) {
	close(w.done)
	w.wg.Wait()
	return w.acked, w.failures, w.outage
}

// checkAcknowledged fails t for every acknowledged ConfigMap the API no longer has.
func checkAcknowledged(t *testing.T, client kubernetes.Interface, acked []string) {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{LabelSelector: "writer=ha"})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	var lost []string
	for _, name := range acked {
		if !have[name] {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged ConfigMaps are gone: %v", len(lost), lost)
	}
}
