package controlplane

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// miniapi on etcd serves kubectl, keeps its objects in etcd under /registry/, and a second
// miniapi on the same etcd serves the same objects.
func TestMiniapiOnEtcd(t *testing.T) {
	etcd := etcdtest.ForTest(t)
	storeFlag := "etcd://" + strings.Join(etcd.HostPorts, ",")
	first := startClusterWith(t, func(o *Options) { o.Store = storeFlag })

	pod := `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  schedulerName: test-none
  containers:
  - name: c
    image: localhost/minik8s/netexec:v1
`
	out := first.mustKubectl(t, pod, "create", "--validate=false", "-f", "-")
	if !strings.Contains(out, "pod/web created") {
		t.Fatalf("kubectl create: %s", out)
	}
	first.mustKubectl(t, "", "create", "configmap", "settings", "--from-literal=mode=etcd")
	out = first.mustKubectl(t, "", "get", "pods")
	if !regexpLine(out, `^web\s+0/1\s+Pending`) {
		t.Fatalf("kubectl get pods:\n%s", out)
	}
	if out := first.mustKubectl(t, "", "get", "configmap", "settings", "-o", "jsonpath={.data.mode}"); out != "etcd" {
		t.Fatalf("kubectl get configmap: %q", out)
	}

	// The objects are etcd's, under the Kubernetes key layout.
	direct, err := store.OpenEtcd(etcd.Endpoints, "")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	kv, err := direct.Get(context.Background(), "/registry/core/pods/default/web")
	if err != nil || !strings.Contains(string(kv.Value), `"name":"web"`) {
		t.Fatalf("pod in etcd: %v %s", err, kv.Value)
	}

	// A second control plane on the same etcd sees them and its writes reach the first.
	second := startClusterWith(t, func(o *Options) { o.Store = storeFlag })
	if out := second.mustKubectl(t, "", "get", "pod", "web", "-o", "jsonpath={.metadata.labels.app}"); out != "web" {
		t.Fatalf("second miniapi: pod web label app = %q", out)
	}
	second.mustKubectl(t, "", "label", "pod", "web", "tier=front")
	waitFor(t, "the first miniapi to see the second's write", func() bool {
		p, err := first.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && p.Labels["tier"] == "front"
	})
	out = first.mustKubectl(t, "", "get", "pods", "-l", "tier=front", "-o", "name")
	if strings.TrimSpace(out) != "pod/web" {
		t.Fatalf("first miniapi, label selector after the second's write: %q", out)
	}
}

func TestStoreFlag(t *testing.T) {
	for flag, wantErr := range map[string]string{
		"bolt":                              "",
		"etcd://127.0.0.1:2379":             "",
		"etcd://h1:2379,h2:2379,[::1]:2379": "",
		"sqlite":                            `--store "sqlite": unknown store`,
		"etcd://":                           `endpoint "" is not HOST:PORT`,
		"etcd://h1":                         `endpoint "h1" is not HOST:PORT`,
		"etcd://h1:port":                    `endpoint "h1:port" has no valid port`,
		"etcd://h1:2379,":                   `endpoint "" is not HOST:PORT`,
	} {
		o := Options{DataDir: "/tmp/x", BindAddress: "127.0.0.1", SecurePort: 6443, ServiceRange: "10.96.0.0/12", Store: flag}
		err := o.Validate()
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("--store %s: %v", flag, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "--store")):
			t.Errorf("--store %s: error %v, want one naming --store and containing %q", flag, err, wantErr)
		}
	}
}
