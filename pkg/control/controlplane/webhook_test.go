package controlplane

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	certutil "k8s.io/client-go/util/cert"
)

// webhookServer is a real HTTPS admission webhook on loopback, with a self-signed CA:
// /mutate labels every pod mutated=yes (a JSON patch); /validate refuses pods labelled
// deny=true and warns on the others; /hang answers after 5 s, past any timeout the test sets.
type webhookServer struct {
	url      string
	caBundle string
}

// loopbackTLSListener listens on a loopback port with a fresh self-signed certificate for
// 127.0.0.1, whose PEM is the caBundle that trusts it.
func loopbackTLSListener(t *testing.T) (net.Listener, []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	return l, certPEM
}

func startWebhookServer(t *testing.T) *webhookServer {
	t.Helper()
	l, certPEM := loopbackTLSListener(t)
	stop := make(chan struct{})
	review := func(answer func(pod *corev1.Pod, resp *admissionv1.AdmissionResponse)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var ar admissionv1.AdmissionReview
			if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil {
				http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
				return
			}
			var pod corev1.Pod
			if err := json.Unmarshal(ar.Request.Object.Raw, &pod); err != nil {
				http.Error(w, "not a pod", http.StatusBadRequest)
				return
			}
			resp := &admissionv1.AdmissionResponse{UID: ar.Request.UID, Allowed: true}
			answer(&pod, resp)
			ar.Response, ar.Request = resp, nil
			_ = json.NewEncoder(w).Encode(ar)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mutate", review(func(pod *corev1.Pod, resp *admissionv1.AdmissionResponse) {
		patch := `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		if pod.Labels == nil {
			patch = `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(patch), &pt
		resp.AuditAnnotations = map[string]string{"mutated": "yes"}
	}))
	mux.Handle("/validate", review(func(pod *corev1.Pod, resp *admissionv1.AdmissionResponse) {
		if pod.Labels["deny"] == "true" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "pods labelled deny=true are not welcome"}
			return
		}
		resp.Warnings = []string{"checked by the test webhook"}
	}))
	mux.Handle("/hang", review(func(*corev1.Pod, *admissionv1.AdmissionResponse) {
		select {
		case <-time.After(5 * time.Second):
		case <-stop:
		}
	}))
	// /connect refuses exec and attach with stdin, naming what it was sent.
	mux.HandleFunc("/connect", func(w http.ResponseWriter, r *http.Request) {
		var ar admissionv1.AdmissionReview
		var options corev1.PodExecOptions // PodAttachOptions' fields and the command
		if err := json.NewDecoder(r.Body).Decode(&ar); err != nil || ar.Request == nil || json.Unmarshal(ar.Request.Object.Raw, &options) != nil {
			http.Error(w, "not an AdmissionReview of exec or attach", http.StatusBadRequest)
			return
		}
		req := ar.Request
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: !options.Stdin}
		if options.Stdin {
			resp.Result = &metav1.Status{Message: fmt.Sprintf("no stdin: %s %s/%s %s of %s in %s, container %s, command %q",
				req.Operation, req.Resource.Resource, req.SubResource, req.Kind.Kind, req.Name, req.Namespace, options.Container, options.Command)}
		}
		ar.Response, ar.Request = resp, nil
		_ = json.NewEncoder(w).Encode(ar)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { close(stop); _ = srv.Close() })
	return &webhookServer{url: "https://" + l.Addr().String(), caBundle: base64.StdEncoding.EncodeToString(certPEM)}
}

// webhook is one entry of a webhook configuration's webhooks: name calls path on the
// server for rule (a RuleWithOperations in YAML flow style), with extra fields (YAML lines
// such as selectors or a failurePolicy).
func (s *webhookServer) webhook(name, path, rule string, extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- name: %s\n  clientConfig: {url: \"%s%s\", caBundle: \"%s\"}\n  rules: [%s]\n", name, s.url, path, s.caBundle, rule)
	for _, field := range extra {
		fmt.Fprintf(&b, "  %s\n", field)
	}
	b.WriteString("  sideEffects: None\n  admissionReviewVersions: [v1]\n")
	return b.String()
}

// webhookConfiguration is a MutatingWebhookConfiguration or ValidatingWebhookConfiguration
// (kind) named name, in YAML.
func webhookConfiguration(kind, name string, webhooks ...string) string {
	return fmt.Sprintf("apiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata: {name: %s}\nwebhooks:\n%s", kind, name, strings.Join(webhooks, ""))
}

// metricValue is the value of series (a metric's name and labels as /metrics prints
// them) in metrics, 0 while it has none.
func metricValue(t *testing.T, metrics, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// metrics reads miniapi's /metrics as the admin.
func (c *cluster) metrics(t *testing.T) string {
	t.Helper()
	out, err := c.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return string(out)
}

// TestAdmissionWebhooks: miniapi calls real HTTPS webhooks (URL clientConfig, caBundle)
// as kube-apiserver does: a mutating webhook's JSON patch labels new pods, a validating
// webhook refuses with its message and warns through kubectl; namespaceSelector,
// objectSelector and matchConditions choose what is sent; failurePolicy Ignore admits and
// Fail refuses while a webhook hangs, both within timeoutSeconds.
func TestAdmissionWebhooks(t *testing.T) {
	c := startCluster(t)
	hook := startWebhookServer(t)
	ctx := context.Background()
	for _, ns := range []string{"hooked", "plain", "down-ignore", "down-fail"} {
		c.mustKubectl(t, "", "create", "namespace", ns)
	}
	c.mustKubectl(t, "", "label", "namespace", "hooked", "webhooks=on")
	podCreate := `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}`
	webhooks := webhookConfiguration("MutatingWebhookConfiguration", "label-pods",
		hook.webhook("label.pods.example.com", "/mutate", podCreate,
			`objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}`)) +
		"---\n" + webhookConfiguration("ValidatingWebhookConfiguration", "check-pods",
		hook.webhook("deny.pods.example.com", "/validate", `{operations: [CREATE], apiGroups: [""], apiVersions: ["*"], resources: [pods]}`,
			`namespaceSelector: {matchLabels: {webhooks: "on"}}`,
			`matchConditions: [{name: not-exempt, expression: "object.metadata.name != 'exempt'"}]`),
		hook.webhook("hang-ignore.pods.example.com", "/hang", podCreate,
			`namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: down-ignore}}`, "failurePolicy: Ignore", "timeoutSeconds: 1"),
		hook.webhook("hang-fail.pods.example.com", "/hang", podCreate,
			`namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: down-fail}}`, "failurePolicy: Fail", "timeoutSeconds: 1"))
	metricsBefore := c.metrics(t)
	c.mustKubectl(t, webhooks, "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations"); !regexpLine(out, `^validatingwebhookconfiguration.admissionregistration.k8s.io/check-pods\s+3\s`) {
		t.Errorf("kubectl get does not count the webhooks:\n%s", out)
	}

	run := func(ns, name string, labels ...string) (string, error) {
		args := []string{"run", name, "-n", ns, "--image=localhost/minik8s/netexec:v1"}
		if len(labels) > 0 {
			args = append(args, "--labels="+strings.Join(labels, ","))
		}
		return c.kubectl(t, "", args...)
	}
	labelOf := func(ns, name string) string {
		pod, err := c.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s/%s: %v", ns, name, err)
		}
		return pod.Labels["mutated"]
	}

	// The webhooks apply once miniapi's informers hold the configurations.
	i := 0
	waitFor(t, "the mutating webhook to label a new pod", func() bool {
		i++
		name := fmt.Sprintf("first-%d", i)
		if out, err := run("plain", name); err != nil {
			t.Fatalf("kubectl run: %v\n%s", err, out)
		}
		return labelOf("plain", name) == "yes"
	})
	if out, err := run("plain", "skipped", "skip=yes"); err != nil || labelOf("plain", "skipped") != "" {
		t.Errorf("objectSelector: a pod labelled skip was mutated (or refused: %v %s)", err, out)
	}

	out, err := run("hooked", "welcome")
	if err != nil || !strings.Contains(out, "Warning: checked by the test webhook") || labelOf("hooked", "welcome") != "yes" {
		t.Errorf("an admitted pod: err %v, want the webhook's warning and the mutated label:\n%s", err, out)
	}
	out, err = run("hooked", "refused", "deny=true")
	want := `admission webhook "deny.pods.example.com" denied the request: pods labelled deny=true are not welcome`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("a pod the webhook refuses: err %v, want %q in:\n%s", err, want, out)
	}
	if out, err := run("hooked", "exempt", "deny=true"); err != nil {
		t.Errorf("matchConditions: the exempt pod was sent to the webhook: %v\n%s", err, out)
	}
	if out, err := run("plain", "elsewhere", "deny=true"); err != nil {
		t.Errorf("namespaceSelector: a pod of an unlabelled namespace was sent to the webhook: %v\n%s", err, out)
	}

	start := time.Now()
	if out, err := run("down-ignore", "let-through"); err != nil {
		t.Errorf("failurePolicy Ignore with the webhook hanging refused the pod: %v\n%s", err, out)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("failurePolicy Ignore took %v, past the 1 s timeout", d)
	}
	start = time.Now()
	out, err = run("down-fail", "kept-out")
	if err == nil || !strings.Contains(out, `failed calling webhook "hang-fail.pods.example.com"`) {
		t.Errorf("failurePolicy Fail with the webhook hanging: err %v, want a refusal naming the webhook:\n%s", err, out)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("failurePolicy Fail took %v, past the 1 s timeout", d)
	}

	// The counters are the process's (go test -count=2 runs this again in one process): what
	// this test added to them is the difference with what they were before.
	metricsAfter := c.metrics(t)
	for _, m := range []struct {
		series   string
		min, max float64
	}{
		{`apiserver_admission_webhook_admission_duration_seconds_count{name="label.pods.example.com",operation="CREATE",rejected="false",type="admit"}`, 1, math.Inf(1)},
		{`apiserver_admission_webhook_rejection_count{error_type="no_error",name="deny.pods.example.com",operation="CREATE",rejection_code="403",type="validating"}`, 1, math.Inf(1)},
		{`apiserver_admission_webhook_fail_open_count{name="hang-ignore.pods.example.com",type="validating"}`, 1, 1},
	} {
		if added := metricValue(t, metricsAfter, m.series) - metricValue(t, metricsBefore, m.series); added < m.min || added > m.max {
			t.Errorf("/metrics: %s rose by %v, want %v to %v", m.series, added, m.min, m.max)
		}
	}

	// dryRun: the webhooks declare no side effects, so a server-side dry run is sent to them.
	if out, err := c.kubectl(t, "", "run", "dry", "-n", "hooked", "--image=x", "--labels=deny=true", "--dry-run=server"); err == nil || !strings.Contains(out, "not welcome") {
		t.Errorf("a server-side dry run was not sent to the validating webhook: %v\n%s", err, out)
	}
}

// TestAdmissionWebhookConnect: exec and attach are CONNECTs that webhooks admit, before
// the pod is looked for, with the request's options as the object (the e2e's "should be
// able to deny attaching pod").
func TestAdmissionWebhookConnect(t *testing.T) {
	c := startCluster(t)
	hook := startWebhookServer(t)
	c.mustKubectl(t, "", "create", "namespace", "hooked")
	c.mustKubectl(t, webhookConfiguration("ValidatingWebhookConfiguration", "check-connect",
		hook.webhook("connect.pods.example.com", "/connect", `{operations: [CONNECT], apiGroups: [""], apiVersions: [v1], resources: [pods/attach, pods/exec]}`)),
		"apply", "-f", "-")
	connect := func(sub string, params ...string) error {
		req := c.client.CoreV1().RESTClient().Post().AbsPath("/api/v1/namespaces/hooked/pods/app/" + sub)
		for i := 0; i < len(params); i += 2 {
			req.Param(params[i], params[i+1])
		}
		return req.Do(context.Background()).Error()
	}
	var err error
	waitFor(t, "the webhook to refuse an attach with stdin", func() bool {
		err = connect("attach", "stdin", "true", "container", "c1")
		return err != nil && strings.Contains(err.Error(), "denied the request")
	})
	want := `admission webhook "connect.pods.example.com" denied the request: no stdin: CONNECT pods/attach PodAttachOptions of app in hooked, container c1, command []`
	if !strings.Contains(err.Error(), want) {
		t.Errorf("attach with stdin: %v, want %q", err, want)
	}
	want = `no stdin: CONNECT pods/exec PodExecOptions of app in hooked, container c1, command ["sh" "-c"]`
	if err := connect("exec", "stdin", "1", "container", "c1", "command", "sh", "command", "-c"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("exec with stdin: %v, want %q", err, want)
	}
	if err := connect("attach", "container", "c1", "stdout", "true"); !apierrors.IsNotFound(err) {
		t.Errorf("attach without stdin: %v, want the webhook to admit it and the pod to be not found", err)
	}
}

// TestValidatingAdmissionPolicy: a policy's CEL expression refuses, with its message, the
// pods of namespaces bound with Deny, and only warns (kubectl prints it) where bound with Warn.
func TestValidatingAdmissionPolicy(t *testing.T) {
	c := startCluster(t)
	for _, ns := range []string{"strict", "lenient"} {
		c.mustKubectl(t, "", "create", "namespace", ns)
	}
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: local-images}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  validations:
  - expression: "object.spec.containers.all(c, c.image.startsWith('localhost/'))"
    message: images must come from localhost
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: local-images-strict}
spec:
  policyName: local-images
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: strict}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: local-images-lenient}
spec:
  policyName: local-images
  validationActions: [Warn, Audit]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: lenient}}}
`
	c.mustKubectl(t, policy, "apply", "-f", "-")
	if out := c.mustKubectl(t, "", "get", "validatingadmissionpolicybindings"); !regexpLine(out, `^local-images-strict\s+local-images\s+<unset>\s`) {
		t.Errorf("kubectl get validatingadmissionpolicybindings:\n%s", out)
	}
	want := "ValidatingAdmissionPolicy 'local-images' with binding 'local-images-strict' denied request: images must come from localhost"
	i := 0
	var out string
	waitFor(t, "the policy to refuse a pod", func() bool {
		i++
		var err error
		out, err = c.kubectl(t, "", "run", fmt.Sprintf("remote-%d", i), "-n", "strict", "--image=docker.io/library/nginx")
		return err != nil
	})
	if !strings.Contains(out, want) {
		t.Errorf("the refusal lacks %q:\n%s", want, out)
	}
	if out, err := c.kubectl(t, "", "run", "local", "-n", "strict", "--image=localhost/minik8s/netexec:v1"); err != nil {
		t.Errorf("a pod the policy allows was refused: %v\n%s", err, out)
	}
	// Each binding takes effect when the admission plugin next refreshes its policies (once a
	// second, as kube-apiserver's), so the lenient one may come a refresh after the strict one.
	wantWarn := "Warning: Validation failed for ValidatingAdmissionPolicy 'local-images' with binding 'local-images-lenient': images must come from localhost"
	waitFor(t, "the Warn binding to warn", func() bool {
		i++
		var err error
		out, err = c.kubectl(t, "", "run", fmt.Sprintf("remote-%d", i), "-n", "lenient", "--image=docker.io/library/nginx")
		if err != nil {
			t.Fatalf("the Warn binding refused a pod: %v\n%s", err, out)
		}
		return strings.Contains(out, wantWarn)
	})
	if m := c.metrics(t); !regexpLine(m, `^apiserver_validating_admission_policy_check_total\{enforcement_action="deny",error_type="invalid_error",policy="local-images",policy_binding="local-images-strict"\} [1-9]`) {
		t.Errorf("/metrics does not count the policy's denials")
	}
	bad := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: both}
spec: {policyName: local-images, validationActions: [Deny, Warn]}
`
	if out, err := c.kubectl(t, bad, "apply", "-f", "-"); err == nil || !strings.Contains(out, "spec.validationActions: Invalid value") {
		t.Errorf("a binding with both Deny and Warn: err %v\n%s", err, out)
	}
}

// TestAdmissionWebhookMutatesCustomResource: a mutating webhook's JSON patch lands on a
// custom resource (an object client-go's scheme does not know), as on a pod; before, the
// webhook's answer could not be decoded ("no kind ... is registered").
func TestAdmissionWebhookMutatesCustomResource(t *testing.T) {
	c := startCluster(t)
	hook := startWebhookServer(t)
	c.applyCRD(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.hooks.example.com}
spec:
  group: hooks.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
`, "widgets.hooks.example.com")
	c.mustKubectl(t, webhookConfiguration("MutatingWebhookConfiguration", "label-widgets",
		hook.webhook("label.widgets.example.com", "/mutate", `{operations: [CREATE], apiGroups: [hooks.example.com], apiVersions: [v1], resources: [widgets]}`)),
		"apply", "-f", "-")
	widgets := customResources(c.adminConfig(t), "hooks.example.com", "v1", "widgets")
	i := 0
	waitFor(t, "a new widget to be labelled by the webhook", func() bool {
		i++
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "hooks.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%d", i), "labels": map[string]any{"app": "x"}}, "spec": map[string]any{"size": int64(1)}}}
		got, err := widgets.Create(context.Background(), w, metav1.CreateOptions{})
		if err != nil {
			t.Logf("create widget: %v", err)
			return false
		}
		return got.GetLabels()["mutated"] == "yes" && got.GetLabels()["app"] == "x"
	})
}

// A ValidatingAdmissionPolicy's expressions are type-checked against the kinds it matches
// once per generation, and what is wrong is written to status.typeChecking, as
// kube-controller-manager's validatingadmissionpolicy-status controller does: the policy
// is still admitted (and enforced), the status is how its author learns of the typo.
func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	c := startCluster(t)
	c.mustKubectl(t, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  validations:
  - expression: "object.spec.replicas <= 5"
  - expression: "object.spec.replica <= 5"
    messageExpression: "'too many: ' + string(object.spec.replicas)"
`, "apply", "-f", "-")
	status := func() string {
		return c.mustKubectl(t, "", "get", "validatingadmissionpolicy", "replicas", "-o",
			`jsonpath={.metadata.generation} {.status.observedGeneration} {range .status.typeChecking.expressionWarnings[*]}[{.fieldRef}] {.warning}{end}`)
	}
	var out string
	waitFor(t, "the type checking of generation 1", func() bool {
		out = status()
		return strings.HasPrefix(out, "1 1 ")
	})
	want := "1 1 [spec.validations[1].expression] apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'"
	if !strings.HasPrefix(out, want) || strings.Count(out, "[spec.") != 1 {
		t.Errorf("status of a policy with a typo:\n%s\nwant it to start with\n%s", out, want)
	}
	c.mustKubectl(t, "", "patch", "validatingadmissionpolicy", "replicas", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/validations/1/expression","value":"object.spec.replicas >= 0"}]`)
	waitFor(t, "the type checking of generation 2", func() bool {
		out = status()
		return strings.HasPrefix(out, "2 2")
	})
	if strings.TrimSpace(out) != "2 2" {
		t.Errorf("status of the corrected policy: %q", out)
	}
	if out := c.mustKubectl(t, "", "get", "validatingadmissionpolicy", "replicas", "-o", "jsonpath={.metadata.managedFields[*].manager}"); !strings.Contains(out, "validatingadmissionpolicy-status") {
		t.Errorf("managers of the policy: %s", out)
	}
}
