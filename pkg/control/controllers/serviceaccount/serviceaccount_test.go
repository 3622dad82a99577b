package serviceaccount_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultServiceAccountInEveryNamespace(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	if _, err := cl.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := func(ns string) {
		t.Helper()
		controllertest.WaitFor(t, "the default ServiceAccount in "+ns, 10*time.Second, func() (bool, string) {
			_, err := cl.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	for _, ns := range []string{"default", "kube-system", "team"} {
		wait(ns)
	}
	if err := cl.Client.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("team")
	out := cl.MustKubectl(t, "", "get", "sa", "-n", "team")
	if len(out) == 0 {
		t.Fatal("kubectl get sa printed nothing")
	}
}
