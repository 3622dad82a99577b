package controlplane_test

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
)

// TestShutdownLeavesNoGoroutine runs miniapi as the binary does (every controller, the
// scheduler, leader election), waits until both leases are held, then cancels Run as
// SIGTERM does: Run must return with every goroutine it started gone.
func TestShutdownLeavesNoGoroutine(t *testing.T) {
	testenv.Integration(t, "starts a whole miniapi control plane")
	before := goleak.IgnoreCurrent()
	baseline := runtime.NumGoroutine()
	o := controlplane.Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", SecurePort: freeport.For(t), Store: "bolt",
		ServiceRange: "10.96.0.0/12", Controllers: []string{"*"},
		LeaderElection: controlplane.LeaderElection{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		Log:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(ctx, o) }()

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("miniapi stopped before it led: %v", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", controlplane.AdminKubeconfig(o.DataDir))
		if err != nil {
			return false, nil
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
			if _, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, lease, metav1.GetOptions{}); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("miniapi did not take both leases: %v", err)
	}
	running := runtime.NumGoroutine()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of its context ending")
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines left after Run returned (%d before Run, %d while running):\n%v", baseline, running, err)
	}
	t.Logf("goroutines: %d before Run, %d while running, %d after it returned", baseline, running, runtime.NumGoroutine())
}
