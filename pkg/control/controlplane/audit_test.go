package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/freeport"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
  omitStages: [RequestReceived]
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [serviceaccounts]}]
- level: Metadata
  verbs: [get, list, watch]
  namespaces: [default]
  resources: [{group: "", resources: [pods]}]
- level: Metadata
  nonResourceURLs: [/version]
- level: None
`

// readAuditLog parses every line of the log as an audit.k8s.io/v1 Event, refusing unknown
// fields, and returns the events (of users other than miniapi's own components).
func readAuditLog(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev auditv1.Event
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("audit line is not an audit.k8s.io/v1 Event: %v\n%s", err, sc.Text())
		}
		if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
			t.Fatalf("audit line is %s %s", ev.APIVersion, ev.Kind)
		}
		events = append(events, ev)
	}
	return events
}

// find returns the events of the requests of one verb on one resource name, in log order
// (a create's RequestReceived event has no name yet: the request is known by its audit ID).
func find(events []auditv1.Event, verb, resource, name string) []auditv1.Event {
	ids := map[string]bool{}
	for _, ev := range events {
		if ev.Verb == verb && ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && ev.ObjectRef.Name == name {
			ids[string(ev.AuditID)] = true
		}
	}
	var out []auditv1.Event
	for _, ev := range events {
		if ids[string(ev.AuditID)] {
			out = append(out, ev)
		}
	}
	return out
}

func stages(events []auditv1.Event) string {
	var s []string
	for _, ev := range events {
		s = append(s, string(ev.Stage))
	}
	return strings.Join(s, ",")
}

// The audit log with a policy, driven by the real kubectl: Metadata events for a secret
// (no data), bodies for a RequestResponse rule, nothing for a None rule, the impersonated
// user and the authorization decision, ResponseStarted for a watch, a non-resource URL.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit", "audit.log")
	c := startClusterWith(t, func(o *Options) {
		o.Security.Audit.LogPath, o.Security.Audit.PolicyFile = logPath, policyFile
	})
	c.mustKubectl(t, "", "create", "secret", "generic", "creds", "--from-literal=password="+secretPlaintext)
	c.mustKubectl(t, "", "create", "configmap", "quiet", "--from-literal=a=b")
	c.mustKubectl(t, "", "create", "serviceaccount", "robot")
	if out, err := c.kubectl(t, "", "--as=vera", "get", "pods"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Fatalf("kubectl --as=vera get pods: %v %s", err, out)
	}
	c.mustKubectl(t, "", "version")
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := anonymous.Get(c.url + "/version")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	timeout := int64(1)
	w, err := c.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() {
	}

	var events []auditv1.Event
	waitFor(t, "the watch's ResponseComplete event", func() bool {
		events = readAuditLog(t, logPath)
		for _, ev := range events {
			if ev.Verb == "watch" && ev.Stage == auditv1.StageResponseComplete {
				return true
			}
		}
		return false
	})
	raw, _ := os.ReadFile(logPath)
	assertNoPlaintext(t, "the audit log", raw)

	// Secrets: Metadata, RequestReceived omitted, no bodies, the admin and the decision.
	secret := find(events, "create", "secrets", "creds")
	if stages(secret) != "ResponseComplete" {
		t.Fatalf("secret create: stages %q, want ResponseComplete only", stages(secret))
	}
	ev := secret[0]
	if ev.Level != auditv1.LevelMetadata || ev.RequestObject != nil || ev.ResponseObject != nil {
		t.Errorf("secret create: level %s, request object %v, response object %v", ev.Level, ev.RequestObject, ev.ResponseObject)
	}
	if ev.User.Username != "admin" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 || ev.ObjectRef.Namespace != "default" ||
		len(ev.SourceIPs) == 0 || !strings.HasPrefix(ev.UserAgent, "kubectl") || ev.AuditID == "" || ev.RequestURI != "/api/v1/namespaces/default/secrets?fieldManager=kubectl-create&fieldValidation=Strict" {
		t.Errorf("secret create event: %+v", ev)
	}
	if ev.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("secret create: annotations %v", ev.Annotations)
	}

	// A None rule logs nothing.
	for _, ev := range events {
		if ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" {
			t.Fatalf("configmaps are level None, yet logged: %+v", ev)
		}
	}

	// RequestResponse: both stages, both bodies.
	sa := find(events, "create", "serviceaccounts", "robot")
	if stages(sa) != "RequestReceived,ResponseComplete" {
		t.Fatalf("serviceaccount create: stages %q", stages(sa))
	}
	if ev := sa[1]; ev.Level != auditv1.LevelRequestResponse || ev.RequestObject == nil || ev.ResponseObject == nil ||
		!strings.Contains(string(ev.RequestObject.Raw), `"name":"robot"`) || !strings.Contains(string(ev.ResponseObject.Raw), `"uid"`) {
		t.Errorf("serviceaccount create: level %s, request %s, response %s", ev.Level, ev.RequestObject, ev.ResponseObject)
	}

	// Impersonation refused by authorization: the real user, the impersonated one, forbid.
	var vera *auditv1.Event
	for _, ev := range find(events, "list", "pods", "") {
		if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "vera" && ev.Stage == auditv1.StageResponseComplete {
			vera = &ev
		}
	}
	if vera == nil {
		t.Fatal("no event of the impersonated list of pods")
	}
	if vera.User.Username != "admin" || vera.ResponseStatus.Code != 403 || vera.Annotations["authorization.k8s.io/decision"] != "forbid" ||
		!strings.Contains(vera.ResponseStatus.Message, `User "vera" cannot list resource "pods"`) {
		t.Errorf("impersonated list: user %s, status %+v, annotations %v", vera.User.Username, vera.ResponseStatus, vera.Annotations)
	}

	// A watch has ResponseStarted between its two other stages.
	var watch []auditv1.Event
	for _, ev := range events {
		if ev.Verb == "watch" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" {
			watch = append(watch, ev)
		}
	}
	if stages(watch) != "RequestReceived,ResponseStarted,ResponseComplete" {
		t.Errorf("watch: stages %q", stages(watch))
	}

	var version bool
	for _, ev := range events {
		version = version || (strings.HasPrefix(ev.RequestURI, "/version?") && ev.ObjectRef == nil && ev.Stage == auditv1.StageResponseComplete)
	}
	if !version {
		t.Error("no event for /version (nonResourceURLs rule)")
	}

	// An anonymous request is audited as Kubernetes' anonymous authenticator names it.
	var anon bool
	for _, ev := range events {
		anon = anon || (ev.RequestURI == "/version" && ev.Stage == auditv1.StageResponseComplete &&
			ev.User.Username == "system:anonymous" && slices.Equal(ev.User.Groups, []string{"system:unauthenticated"}))
	}
	if !anon {
		t.Error("no event of the anonymous GET /version by system:anonymous in group system:unauthenticated")
	}
}

// A policy that is not one stops miniapi at start with the flag's name.
func TestAuditPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", SecurePort: freeport.For(t), Store: "bolt", ServiceRange: "10.96.0.0/12",
		Log: slog.New(slog.DiscardHandler)}
	o.Security.Audit.LogPath, o.Security.Audit.PolicyFile = filepath.Join(dir, "audit.log"), bad
	err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "--audit-policy-file") || !strings.Contains(err.Error(), "Loud") {
		t.Fatalf("error %v, want one naming --audit-policy-file and the bad level", err)
	}
}

// Strategic-merge patches that run past their ?timeout= get 504 and are not applied, not
// even later, and the audit log records the code each client saw (issue 28, item 2: with
// thousands of finalizers a patch takes longer than its timeout). A patch that made it in
// time (200) must be there.
func TestTimedOutPatchIsNotApplied(t *testing.T) {
	dir := t.TempDir()
	policyFile := filepath.Join(dir, "policy.yaml")
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n" +
		"- level: Metadata\n  verbs: [patch]\n  resources: [{group: \"\", resources: [configmaps]}]\n- level: None\n"
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	c := startClusterWith(t, func(o *Options) {
		o.Security.Audit.LogPath, o.Security.Audit.PolicyFile = logPath, policyFile
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	for i := range 1000 { // a strategic merge into these takes far longer than 10ms
		cm.Finalizers = append(cm.Finalizers, fmt.Sprintf("example.com/f-%04d", i))
	}
	cms := c.client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cms.Patch(context.Background(), "big", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	const patches = 8
	codes := make([]int, patches)
	var wg sync.WaitGroup
	for i := range patches {
		wg.Go(func() {
			body := fmt.Sprintf(`{"metadata":{"finalizers":["example.com/late-%d"]}}`, i)
			var code int
			err := c.client.CoreV1().RESTClient().Patch(types.StrategicMergePatchType).Namespace("default").Resource("configmaps").Name("big").
				Param("timeout", "10ms").Body([]byte(body)).Do(t.Context()).StatusCode(&code).Error()
			if err != nil && code != http.StatusGatewayTimeout {
				t.Errorf("patch %d: %d %v, want 200 or 504", i, code, err)
			}
			codes[i] = code
		})
	}
	wg.Wait()
	sent := map[int]int{}
	for _, code := range codes {
		sent[code]++
	}
	if sent[http.StatusGatewayTimeout] == 0 {
		t.Fatalf("no patch timed out (codes %v): the test shows nothing", codes)
	}

	// Once every patch's handler has finished (its ResponseComplete event), the object holds
	// the patches answered 200 and none answered 504, and the log has the codes sent.
	var done []auditv1.Event
	waitFor(t, "the patches' ResponseComplete events", func() bool {
		done = done[:0]
		for _, ev := range find(readAuditLog(t, logPath), "patch", "configmaps", "big") {
			if ev.Stage != auditv1.StageRequestReceived {
				done = append(done, ev)
			}
		}
		return len(done) == patches
	})
	logged := map[int]int{}
	for _, ev := range done {
		if ev.Stage == auditv1.StageResponseComplete && ev.ResponseStatus != nil {
			logged[int(ev.ResponseStatus.Code)]++
		}
	}
	if !maps.Equal(sent, logged) {
		t.Errorf("the audit log has codes %v (stage ResponseComplete), the clients got %v", logged, sent)
	}
	got, err := cms.Get(t.Context(), "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, code := range codes {
		f := fmt.Sprintf("example.com/late-%d", i)
		if applied := slices.Contains(got.Finalizers, f); applied != (code == http.StatusOK) {
			t.Errorf("patch %d answered %d: applied %v", i, code, applied)
		}
	}
}
