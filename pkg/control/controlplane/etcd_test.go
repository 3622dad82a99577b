package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	direct, err := store.OpenEtcd(etcd.Endpoints, "", nil)
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

// TestEtcdClusterWithTLS: miniapi on a three-member etcd cluster over TLS (client
// certificates both ways, as --etcd-cafile/--etcd-certfile/--etcd-keyfile give) keeps
// writing through the loss of one member, refuses writes with an error naming etcd once two
// are gone (quorum lost: kube-apiserver's 504 once the request's timeout runs out) without
// going down, and writes again once one comes back; nothing acknowledged is lost.
func TestEtcdClusterWithTLS(t *testing.T) {
	etcd := etcdtest.ClusterForTest(t, etcdtest.Options{Members: 3, TLS: true})
	c := startClusterWith(t, func(o *Options) {
		o.Store = "etcd://" + strings.Join(etcd.HostPorts, ",")
		o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile = etcd.TLS.CAFile, etcd.TLS.CertFile, etcd.TLS.KeyFile
	})
	create := func(name string) (string, error) {
		return c.kubectl(t, "", "--request-timeout=30s", "create", "configmap", name, "--from-literal=k=v")
	}
	if out, err := create("before"); err != nil {
		t.Fatalf("write on a whole cluster: %v\n%s", err, out)
	}
	etcd.Members[2].Stop()
	for i := range 5 {
		if out, err := create(fmt.Sprintf("one-down-%d", i)); err != nil {
			t.Fatalf("write with one member of three down: %v\n%s", err, out)
		}
	}
	etcd.Members[1].Stop()
	// As kube-apiserver: the write waits for etcd until the request's timeout, then 504.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "no-quorum"}}
	err := c.client.CoreV1().RESTClient().Post().Namespace("default").Resource("configmaps").Param("timeout", "5s").Body(cm).Do(context.Background()).Error()
	if !apierrors.IsTimeout(err) || !strings.Contains(err.Error(), "request did not complete within requested timeout") {
		t.Fatalf("write without quorum: %v, want kube-apiserver's 504 Timeout", err)
	}
	if out := c.mustKubectl(t, "", "get", "--raw", "/livez"); out != "ok" {
		t.Errorf("miniapi without etcd quorum: /livez %q", out)
	}
	if err := etcd.Members[1].Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a write once the quorum is back", func() bool {
		_, err := create("quorum-back")
		return err == nil
	})
	if out := c.mustKubectl(t, "", "get", "configmaps", "-o", "name"); !strings.Contains(out, "configmap/one-down-4") || !strings.Contains(out, "configmap/quorum-back") {
		t.Errorf("configmaps after the faults:\n%s", out)
	}
}

func TestEtcdTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		store, ca, cert, key, wantErr string
	}{
		{"etcd://h:2379", "ca.crt", "c.crt", "c.key", ""},
		{"etcd://h:2379", "ca.crt", "", "", ""},
		{"bolt", "ca.crt", "c.crt", "c.key", "need --store etcd://"},
		{"etcd://h:2379", "", "c.crt", "c.key", "need --etcd-cafile"},
		{"etcd://h:2379", "ca.crt", "c.crt", "", "--etcd-certfile and --etcd-keyfile go together"},
	} {
		o := Options{DataDir: "/tmp/x", BindAddress: "127.0.0.1", SecurePort: 6443, ServiceRange: "10.96.0.0/12", Store: tc.store,
			EtcdCAFile: tc.ca, EtcdCertFile: tc.cert, EtcdKeyFile: tc.key}
		err := o.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: error %v, want %q", tc, err, tc.wantErr)
		}
	}
}
