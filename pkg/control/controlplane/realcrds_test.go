package controlplane

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/minik8s/minik8s/internal/testenv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The Gateway API's standard channel, installed as its docs say (`kubectl apply
// --server-side`, here from the kustomization the module ships): every CRD is established,
// its defaults apply, its CEL rules and enums refuse with kube-apiserver's messages, its
// printer columns show, and the ValidatingAdmissionPolicy it installs is enforced.
func TestGatewayAPIStandardCRDs(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	crds := filepath.Join(testenv.ModuleDir(t, "sigs.k8s.io/gateway-api"), "config", "crd")
	out := c.mustKubectl(t, "", "apply", "--server-side", "-k", crds)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/gateways.gateway.networking.k8s.io serverside-applied",
		"customresourcedefinition.apiextensions.k8s.io/httproutes.gateway.networking.k8s.io serverside-applied",
		"validatingadmissionpolicy.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io serverside-applied",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/safe-upgrades.gateway.networking.k8s.io serverside-applied",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: no %q in\n%s", want, out)
		}
	}
	c.waitEstablished(t, "crd", "--all")
	if out := c.mustKubectl(t, "", "get", "crd", "-o", "name"); strings.Count(out, ".gateway.networking.k8s.io") != 10 {
		t.Errorf("CRDs:\n%s", out)
	}
	eventually(t, c, "get", "gateways,httproutes,gatewayclasses")

	// Valid objects through the gateway-api Go types, defaults applied by the server.
	cfg := c.adminConfig(t)
	scheme := runtime.NewScheme()
	if err := gatewayv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	class := &gatewayv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "example"},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: "example.com/gateway-controller"}}
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "example",
			Listeners: []gatewayv1.Listener{{Name: "http", Protocol: gatewayv1.HTTPProtocolType, Port: 80}}}}
	route := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "route", Namespace: "default"},
		Spec: gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{"example.com"},
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gw"}}}}}
	for _, o := range []client.Object{class, gw, route} {
		if err := cl.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	if ar := gw.Spec.Listeners[0].AllowedRoutes; ar == nil || ar.Namespaces == nil || ar.Namespaces.From == nil || *ar.Namespaces.From != gatewayv1.NamespacesFromSame {
		t.Errorf("listener allowedRoutes not defaulted: %+v", ar)
	}
	// The status default (Accepted and Programmed pending) shows before any controller wrote one.
	if cs := gw.Status.Conditions; len(cs) != 2 || cs[0].Type != "Accepted" || cs[1].Type != "Programmed" || cs[1].Reason != "Pending" || cs[1].Message != "Waiting for controller" {
		t.Errorf("gateway status not defaulted: %+v", gw.Status)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(route), route); err != nil {
		t.Fatal(err)
	}
	if rs := route.Spec.Rules; len(rs) != 1 || len(rs[0].Matches) != 1 || rs[0].Matches[0].Path == nil ||
		ptr.Deref(rs[0].Matches[0].Path.Type, "") != gatewayv1.PathMatchPathPrefix || ptr.Deref(rs[0].Matches[0].Path.Value, "") != "/" {
		t.Errorf("route rules not defaulted: %+v", rs)
	}
	if p := route.Spec.ParentRefs[0]; ptr.Deref(p.Group, "") != gatewayv1.GroupName || ptr.Deref(p.Kind, "") != "Gateway" {
		t.Errorf("parentRef not defaulted: %+v", p)
	}

	// Invalid objects: the CRDs' own CEL rules and enums, in kube-apiserver's words.
	for _, bad := range []struct{ yaml, want string }{
		{`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls-on-http}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 80, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}
`, `The Gateway "tls-on-http" is invalid: spec.listeners: Invalid value: tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']`},
		{`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: twice}
spec:
  gatewayClassName: example
  listeners:
  - {name: a, protocol: HTTP, port: 80}
  - {name: b, protocol: HTTP, port: 80}
`, `The Gateway "twice" is invalid: spec.listeners: Invalid value: Combination of port, protocol and hostname must be unique for each listener`},
		{`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: relative}
spec:
  rules: [{matches: [{path: {type: PathPrefix, value: foo}}]}]
`, `The HTTPRoute "relative" is invalid: spec.rules[0].matches[0].path: Invalid value: value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']`},
		{`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: glob}
spec:
  rules: [{matches: [{path: {type: Glob, value: /x}}]}]
`, `The HTTPRoute "glob" is invalid: 
* spec.rules[0].matches[0].path.type: Unsupported value: "Glob": supported values: "Exact", "PathPrefix", "RegularExpression"
* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`},
	} {
		out, err := c.kubectl(t, bad.yaml, "create", "-f", "-")
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("want %q, got %v\n%s", bad.want, err, out)
		}
	}
	// A transition rule: a GatewayClass's controllerName is immutable.
	out, err = c.kubectl(t, "", "patch", "gatewayclass", "example", "--type=merge", "-p", `{"spec":{"controllerName":"example.com/other"}}`)
	if want := `The GatewayClass "example" is invalid: spec.controllerName: Invalid value: "example.com/other": Value is immutable`; err == nil || !strings.Contains(out, want) {
		t.Errorf("want %q, got %v\n%s", want, err, out)
	}

	// Printer columns, the Programmed one read from the status a controller writes.
	gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now()}}
	gw.Status.Addresses = []gatewayv1.GatewayStatusAddress{{Value: "192.0.2.1"}}
	if err := cl.Status().Update(ctx, gw); err != nil {
		t.Fatalf("gateway status update: %v", err)
	}
	if out := c.mustKubectl(t, "", "get", "gateways"); !regexpLine(out, `^NAME\s+CLASS\s+ADDRESS\s+PROGRAMMED\s+AGE$`) || !regexpLine(out, `^gw\s+example\s+192\.0\.2\.1\s+True\s+\d+s$`) {
		t.Errorf("kubectl get gateways:\n%s", out)
	}
	if out := c.mustKubectl(t, "", "get", "httproutes"); !regexpLine(out, `^NAME\s+HOSTNAMES\s+AGE$`) || !regexpLine(out, `^route\s+\["example.com"\]\s+\d+s$`) {
		t.Errorf("kubectl get httproutes:\n%s", out)
	}

	// The install's ValidatingAdmissionPolicy refuses an older bundle over the installed one.
	out, err = c.kubectl(t, "", "annotate", "--overwrite", "crd", "referencegrants.gateway.networking.k8s.io", "gateway.networking.k8s.io/bundle-version=v1.4.0")
	if want := "ValidatingAdmissionPolicy 'safe-upgrades.gateway.networking.k8s.io' with binding 'safe-upgrades.gateway.networking.k8s.io' denied request: Installing CRDs with version before v1.5.0 is prohibited by default."; err == nil || !strings.Contains(out, want) {
		t.Errorf("want %q, got %v\n%s", want, err, out)
	}
}

// A custom resource an operator would define: a Greeting owns a ConfigMap holding its
// message and reports the generation it has seen in its status subresource.
const greetingsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: greetings.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: greetings, singular: greeting, kind: Greeting, listKind: GreetingList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              message: {type: string}
          status:
            type: object
            properties:
              observedGeneration: {type: integer}
              configMap: {type: string}
`

var greetingGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Greeting"}

const greetingFinalizer = "example.com/cleanup"

// greetingReconciler is the reconciler a kubebuilder tutorial writes: a finalizer, an owned
// ConfigMap made by CreateOrUpdate, status through the status subresource.
type greetingReconciler struct {
	client.Client
	scheme     *runtime.Scheme
	reconciled atomic.Int32
}

func (r *greetingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.reconciled.Add(1)
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(greetingGVK)
	if err := r.Get(ctx, req.NamespacedName, g); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting-" + req.Name, Namespace: req.Namespace}}
	if !g.GetDeletionTimestamp().IsZero() {
		if !controllerutil.ContainsFinalizer(g, greetingFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(g, greetingFinalizer)
		return ctrl.Result{}, r.Update(ctx, g)
	}
	if controllerutil.AddFinalizer(g, greetingFinalizer) {
		if err := r.Update(ctx, g); err != nil {
			return ctrl.Result{}, err
		}
	}
	message, _, _ := unstructured.NestedString(g.Object, "spec", "message")
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"message": message}
		return controllerutil.SetControllerReference(g, cm, r.scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if err := unstructured.SetNestedMap(g.Object, map[string]any{"observedGeneration": g.GetGeneration(), "configMap": cm.Name}, "status"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.Status().Update(ctx, g)
}

// requestLog records the requests a manager makes, to see how its informers list and watch.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

// loggedTransport is one client's transport, recording into the manager's requestLog.
type loggedTransport struct {
	log  *requestLog
	next http.RoundTripper
}

func (l loggedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	l.log.mu.Lock()
	l.log.urls = append(l.log.urls, req.Method+" "+req.URL.RequestURI())
	l.log.mu.Unlock()
	return l.next.RoundTrip(req)
}

func (l *requestLog) matching(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.urls {
		if strings.HasPrefix(u, prefix) {
			out = append(out, u)
		}
	}
	return out
}

// startGreetingManager runs a controller-runtime manager with leader election (a Lease)
// and the greeting controller until the returned stop is called.
func startGreetingManager(t *testing.T, c *cluster, name string) (manager.Manager, *greetingReconciler, *requestLog, func()) {
	t.Helper()
	cfg, err := ctrl.GetConfig() // as a controller-runtime program loads it (KUBECONFIG)
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return loggedTransport{log, rt} })
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lease, renew, retry := 4*time.Second, 3*time.Second, 200*time.Millisecond
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        testr.NewWithOptions(t, testr.Options{Verbosity: 0}).WithName(name),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              "greetings.example.com",
		LeaderElectionNamespace:       "default",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		RetryPeriod:                   &retry,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &greetingReconciler{Client: mgr.GetClient(), scheme: scheme}
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(greetingGVK)
	if err := ctrl.NewControllerManagedBy(mgr).For(g).Owns(&corev1.ConfigMap{}).Named("greeting-" + name).
		WithOptions(crcontroller.Options{SkipNameValidation: ptr.To(true)}). // a manager per test run in one process
		Complete(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager %s: %v", name, err)
		}
	}
	t.Cleanup(stop)
	return mgr, r, log, stop
}

// A controller-runtime manager, built from the published module, against miniapi: its
// informers sync by a watch list with bookmarks, it reconciles a custom resource's
// create, update and delete (finalizer, owned ConfigMap, status subresource), and two
// managers share the work by leader election on a Lease, the second taking over when the
// first steps down.
func TestControllerRuntimeManager(t *testing.T) {
	c := startCluster(t)
	t.Setenv("KUBECONFIG", c.kubeconfig)
	ctx := context.Background()
	c.applyCRD(t, greetingsCRD, "greetings.example.com")
	eventually(t, c, "get", "greetings")
	cfg := c.adminConfig(t)
	greetings := customResources(cfg, "example.com", "v1", "greetings")

	first, firstR, firstLog, stopFirst := startGreetingManager(t, c, "first")
	select {
	case <-first.Elected():
	case <-time.After(20 * time.Second):
		t.Fatal("the first manager was not elected")
	}
	second, secondR, _, _ := startGreetingManager(t, c, "second")

	// reconciled waits until the greeting's ConfigMap holds message and its status has seen
	// generation.
	reconciled := func(name, message string, generation int64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%s reconciled at generation %d", name, generation), func() bool {
			g, err := greetings.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			seen, _, _ := unstructured.NestedInt64(g.Object, "status", "observedGeneration")
			cm, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "greeting-"+name, metav1.GetOptions{})
			return err == nil && seen == generation && g.GetGeneration() == generation &&
				cm.Data["message"] == message && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == g.GetUID() &&
				slices.Contains(g.GetFinalizers(), greetingFinalizer)
		})
	}
	c.mustKubectl(t, "apiVersion: example.com/v1\nkind: Greeting\nmetadata: {name: hello}\nspec: {message: hi}\n", "create", "-f", "-")
	reconciled("hello", "hi", 1)
	c.mustKubectl(t, "", "patch", "greeting", "hello", "--type=merge", "-p", `{"spec":{"message":"hi again"}}`)
	reconciled("hello", "hi again", 2)
	if n := secondR.reconciled.Load(); n != 0 {
		t.Errorf("the manager that is not the leader reconciled %d times", n)
	}
	select {
	case <-second.Elected():
		t.Error("both managers are leaders")
	default:
	}
	// The informer lists and watches at once (a watch list: initial events, then a
	// bookmark), and its watch holds: no relisting.
	if watches := firstLog.matching("GET /apis/example.com/v1/greetings?"); len(watches) != 1 || !strings.Contains(watches[0], "sendInitialEvents=true") || !strings.Contains(watches[0], "allowWatchBookmarks=true") {
		t.Errorf("the greetings informer's requests: %v", watches)
	}

	// The leader steps down; the other takes the Lease and carries on.
	holder := func() string {
		l, err := c.client.CoordinationV1().Leases("default").Get(ctx, "greetings.example.com", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return ptr.Deref(l.Spec.HolderIdentity, "")
	}
	before := holder()
	stopFirst()
	select {
	case <-second.Elected():
	case <-time.After(20 * time.Second):
		t.Fatal("the second manager did not take over")
	}
	if after := holder(); after == "" || after == before {
		t.Errorf("lease holder %q, before %q", after, before)
	}
	c.mustKubectl(t, "apiVersion: example.com/v1\nkind: Greeting\nmetadata: {name: bonjour}\nspec: {message: salut}\n", "create", "-f", "-")
	reconciled("bonjour", "salut", 1)

	// Delete: the finalizer holds the greeting until the controller cleaned up after it.
	c.mustKubectl(t, "", "delete", "greeting", "hello", "--timeout=30s")
	if _, err := greetings.Get(ctx, "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("greeting after delete: %v", err)
	}
	if _, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "greeting-hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap of a deleted greeting: %v", err)
	}
	if firstR.reconciled.Load() == 0 || secondR.reconciled.Load() == 0 {
		t.Errorf("reconciles: first %d, second %d", firstR.reconciled.Load(), secondR.reconciled.Load())
	}
}
