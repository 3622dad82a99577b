package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/shutdowntest"
)

func TestMain(m *testing.M) {
	shutdowntest.HelperMain(newCommand)
	os.Exit(m.Run())
}

// TestShutdownLeavesNoGoroutine: SIGTERM to a miniapi that is serving (its controllers
// have scaled a Deployment, a client holds a watch open) returns with every goroutine it
// started stopped (goleak): the API server drained, informers, controllers, the scheduler
// and leader election joined, the store closed.
func TestShutdownLeavesNoGoroutine(t *testing.T) {
	port := freeport.For(t)
	dir := filepath.Join(t.TempDir(), "miniapi")
	d := shutdowntest.Start(t, nil, []string{"--data-dir", dir, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port)})

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "localhost/minik8s/netexec:v1"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 2, nil
	})
	if err != nil {
		t.Fatalf("the controllers did not make the Deployment's 2 pods: %v", err)
	}
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	d.StopAndCheck(t)
}
