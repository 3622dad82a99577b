package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// chaosPodsCRD is the CustomResourceDefinition of controller-runtime's examples/crd
// (a ChaosPod keeps a pod of its template running and deletes it now and then), written
// as controller-gen makes it from the example's kubebuilder markers: the module ships the
// Go types, not the YAML. No status subresource: the example writes its status by Update.
const chaosPodsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: chaospods.chaosapps.metamagical.io
spec:
  group: chaosapps.metamagical.io
  scope: Namespaced
  names: {plural: chaospods, singular: chaospod, kind: ChaosPod, listKind: ChaosPodList}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: next stop, type: string, format: date, jsonPath: .spec.nextStop}
    - {name: last run, type: string, format: date, jsonPath: .status.lastRun}
    schema:
      openAPIV3Schema:
        description: ChaosPod is the Schema for the randomjobs API
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            required: [template]
            properties:
              template: {type: object, x-kubernetes-preserve-unknown-fields: true}
              nextStop: {type: string, format: date-time}
          status:
            type: object
            properties:
              lastRun: {type: string, format: date-time}
`

// buildChaosPodExample builds controller-runtime's examples/crd program, unmodified, from
// the published module go.mod requires, into dir; the returned func waits for the build.
func buildChaosPodExample(t *testing.T, dir string) func() string {
	t.Helper()
	testenv.RequireTools(t, "go")
	program := filepath.Join(dir, "chaospod-example")
	cmd := exec.Command("go", "build", "-o", program, "sigs.k8s.io/controller-runtime/examples/crd")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	var once sync.Once
	var err error
	wait := func() error {
		once.Do(func() { err = cmd.Wait() })
		return err
	}
	// A test that fails before it waits still waits here, before its temporary directory
	// is removed: the build would write the program into it after.
	t.Cleanup(func() { _ = wait() })
	return func() string {
		t.Helper()
		if err := wait(); err != nil {
			t.Fatalf("go build sigs.k8s.io/controller-runtime/examples/crd: %v\n%s", err, out.String())
		}
		return program
	}
}

// waitKubectl runs kubectl until it succeeds: a resource just established reaches
// kubectl's discovery a moment later.
func waitKubectl(t *testing.T, l *lab.Lab, args ...string) string {
	t.Helper()
	var out string
	waitFor(t, "kubectl "+strings.Join(args, " "), 30*time.Second, func() (bool, string) {
		var err error
		out, err = cluster.Kubectl(context.Background(), l, args...)
		return err == nil, out
	})
	return out
}

// CRDs and a controller no one here wrote, unmodified, on a one-node lab: the Gateway
// API's standard channel applied by kubectl from the published module (its CEL rules
// enforced in kube-apiserver's words, its printer columns shown), then controller-runtime's
// examples/crd program, built from the published module and run against the lab's API,
// reconciling ChaosPods: it creates each one's pod, records when, and replaces the pod
// when its time is up; deleting a ChaosPod deletes its pod.
func TestThirdPartyCRDsAndController(t *testing.T) {
	testenv.RequireBuilt(t) // before the build: under -short (make unit) the test skips
	gatewayAPI := filepath.Join(testenv.ModuleDir(t, "sigs.k8s.io/gateway-api"), "config", "crd", "standard")
	waitBuilt := buildChaosPodExample(t, t.TempDir()) // builds while the lab comes up
	l := upLab(t, "e2e-crd", 1)
	ctx := context.Background()
	cfg, err := cluster.RESTConfig(l)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)

	// The Gateway API, installed as its docs say: kubectl apply --server-side.
	out := mustKubectl(t, l, "apply", "--server-side", "-f", gatewayAPI)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/gatewayclasses.gateway.networking.k8s.io serverside-applied",
		"customresourcedefinition.apiextensions.k8s.io/gateways.gateway.networking.k8s.io serverside-applied",
		"customresourcedefinition.apiextensions.k8s.io/httproutes.gateway.networking.k8s.io serverside-applied",
		"validatingadmissionpolicy.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io serverside-applied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: no %q in\n%s", want, out)
		}
	}
	files, err := filepath.Glob(filepath.Join(gatewayAPI, "gateway.networking.k8s.io_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_vap_safeupgrades.yaml") { // the policy the CRDs come with
			crds = append(crds, "-f", f)
		}
	}
	if len(crds) != 2*10 {
		t.Fatalf("the standard channel's CRDs: %v", files)
	}
	waitEstablished(t, l, crds...)
	waitKubectl(t, l, "get", "gatewayclasses,gateways,httproutes")

	applyYAML(t, l, `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: example}
spec: {controllerName: example.com/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: example
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route}
spec:
  parentRefs: [{name: gw}]
  hostnames: [example.com]
`)
	// Accepted, with the CRD's defaults.
	if out := mustKubectl(t, l, "get", "httproute", "route", "-o", "jsonpath={.spec.parentRefs[0].kind} {.spec.rules[0].matches[0].path}"); out != `Gateway {"type":"PathPrefix","value":"/"}` {
		t.Errorf("httproute defaults: %q", out)
	}
	// Refused by its CEL rule (x-kubernetes-validations), in kube-apiserver's words.
	out, err = cluster.Kubectl(ctx, l, "create", "-f", writeManifest(t, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: relative}
spec:
  rules: [{matches: [{path: {type: PathPrefix, value: foo}}]}]
`))
	if want := `The HTTPRoute "relative" is invalid: spec.rules[0].matches[0].path: Invalid value: value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']`; err == nil || !strings.Contains(out, want) {
		t.Errorf("want %q, got %v\n%s", want, err, out)
	}
	// The printer columns, PROGRAMMED and ADDRESS read from the status a controller writes.
	mustKubectl(t, l, "patch", "gateway", "gw", "--subresource=status", "--type=merge", "-p",
		`{"status":{"addresses":[{"type":"IPAddress","value":"192.0.2.1"}],"conditions":[{"type":"Programmed","status":"True","reason":"Programmed","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	if out := mustKubectl(t, l, "get", "gateway"); !regexp.MustCompile(`(?m)^NAME\s+CLASS\s+ADDRESS\s+PROGRAMMED\s+AGE$`).MatchString(out) || !regexp.MustCompile(`(?m)^gw\s+example\s+192\.0\.2\.1\s+True\s+\d+s$`).MatchString(out) {
		t.Errorf("kubectl get gateway:\n%s", out)
	}

	// controller-runtime's examples/crd, run as its README says (a manager with the
	// kubeconfig of KUBECONFIG), inside the control-plane namespace: the host has no route
	// into the lab, and the manager's metrics listener (:8080) stays in the lab.
	applyYAML(t, l, chaosPodsCRD)
	waitEstablished(t, l, "crd/chaospods.chaosapps.metamagical.io")
	program := waitBuilt()
	if _, err := l.Start(lab.Process{Name: "chaospod-example", NetNS: l.ControlPlane.NetNS, Args: []string{program},
		Env: []string{"KUBECONFIG=" + l.Kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	waitKubectl(t, l, "get", "chaospods")
	applyYAML(t, l, `apiVersion: chaosapps.metamagical.io/v1
kind: ChaosPod
metadata: {name: chaos}
spec:
  template:
    metadata: {labels: {app: chaos}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: netexec, image: localhost/minik8s/netexec:v1}]
`)
	chaosPods := dyn.Resource(schema.GroupVersionResource{Group: "chaosapps.metamagical.io", Version: "v1", Resource: "chaospods"}).Namespace("default")
	// reconciled waits until the ChaosPod's pod exists, owned by it, other than the pod
	// before (by UID), and the ChaosPod records its run; it returns the pod's UID.
	reconciled := func(before string, within time.Duration) string {
		t.Helper()
		var uid string
		waitFor(t, "the ChaosPod's pod, made by the example controller", within, func() (bool, string) {
			cp, err := chaosPods.Get(ctx, "chaos", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pod, err := client.CoreV1().Pods("default").Get(ctx, "chaos", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			owner := metav1.GetControllerOf(pod)
			nextStop, _, _ := unstructured.NestedString(cp.Object, "spec", "nextStop")
			lastRun, _, _ := unstructured.NestedString(cp.Object, "status", "lastRun")
			uid = string(pod.UID)
			state := fmt.Sprintf("pod %s owner %+v labels %v; nextStop %q lastRun %q", uid, owner, pod.Labels, nextStop, lastRun)
			return uid != before && owner != nil && owner.Kind == "ChaosPod" && owner.UID == cp.GetUID() &&
				pod.Labels["app"] == "chaos" && nextStop != "" && lastRun == pod.CreationTimestamp.UTC().Format(time.RFC3339), state
		})
		return uid
	}
	first := reconciled("", 60*time.Second)
	if out := mustKubectl(t, l, "get", "chaospods"); !regexp.MustCompile(`(?m)^NAME\s+NEXT STOP\s+LAST RUN$`).MatchString(out) || !regexp.MustCompile(`(?m)^chaos\s+\S+\s+\S+$`).MatchString(out) {
		t.Errorf("kubectl get chaospods:\n%s", out)
	}
	// The example deletes the pod once it has seen its stop time pass (10 or 20 s on, or at
	// once when its cache still holds the ChaosPod before its first update, as it may on
	// kube-apiserver too: pods and ChaosPods are two watches) and makes a new one.
	reconciled(first, 60*time.Second)

	// Deleting the ChaosPod deletes its pod: the garbage collector follows the owner
	// reference the example set to a custom resource (a minute: the collector learns a new
	// CRD's kind within its 30 s discovery period, as kube's).
	mustKubectl(t, l, "delete", "chaospod", "chaos", "--timeout=30s")
	waitFor(t, "the deleted ChaosPod's pod to go", time.Minute, func() (bool, string) {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "chaos", metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), err.Error()
		}
		return false, fmt.Sprintf("pod %s deletionTimestamp %v", pod.UID, pod.DeletionTimestamp)
	})
}

// waitEstablished runs `kubectl wait --for=condition=Established` on CRDs just created.
// kubectl fails at once instead of waiting while a new CRD has no conditions yet
// (".status.conditions accessor error: <nil> is of the type <nil>", kubernetes/kubernetes#66439;
// kube-apiserver's new CRDs have `conditions: null` until its naming controller has run, as
// ours): users run it again, and so does this.
func waitEstablished(t *testing.T, l *lab.Lab, crds ...string) {
	t.Helper()
	args := append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)
	waitFor(t, "kubectl wait --for=condition=Established", 90*time.Second, func() (bool, string) {
		out, err := cluster.Kubectl(context.Background(), l, args...)
		if err != nil && !strings.Contains(err.Error(), ".status.conditions accessor error") {
			t.Fatalf("%v", err)
		}
		return err == nil, fmt.Sprint(out, err)
	})
}
