package resourcequota

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/admissiontest"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rq(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func pod(name string, res corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: res}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func TestCheck(t *testing.T) {
	withLimits := corev1.ResourceRequirements{Requests: admissiontest.ResourceList("cpu", "500m"), Limits: admissiontest.ResourceList("cpu", "1")}
	for _, tc := range []struct {
		name   string
		quotas []*corev1.ResourceQuota
		pod    *corev1.Pod
		want   string // error text, "" when admitted
		used   string // the first quota's used after the charge
	}{
		{"exceeded", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("pods", "2"), admissiontest.ResourceList("pods", "2"))}, pod("p", withLimits),
			`pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`, ""},
		{"charged", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("pods", "2", "limits.cpu", "4"), admissiontest.ResourceList("pods", "1", "limits.cpu", "1"))}, pod("p", withLimits),
			"", "limits.cpu=2,pods=2"},
		{"compute exceeded", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("requests.cpu", "1"), admissiontest.ResourceList("requests.cpu", "800m"))}, pod("p", withLimits),
			`exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=800m, limited: requests.cpu=1`, ""},
		{"limits required", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("limits.memory", "1Gi", "cpu", "2"), admissiontest.ResourceList("limits.memory", "0", "cpu", "0"))}, pod("p", corev1.ResourceRequirements{}),
			`pods "p" is forbidden: failed quota: q: must specify cpu for: c; limits.memory for: c`, ""},
		{"status unknown", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("pods", "2"), nil)}, pod("p", withLimits),
			`status unknown for quota: q, resources: pods`, ""},
		{"scope not matched", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("pods", "1"), admissiontest.ResourceList("pods", "1"), corev1.ResourceQuotaScopeBestEffort)}, pod("p", withLimits),
			"", ""},
		{"scope matched", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("pods", "1"), admissiontest.ResourceList("pods", "1"), corev1.ResourceQuotaScopeBestEffort)}, pod("p", corev1.ResourceRequirements{}),
			`exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`, ""},
		{"count syntax", []*corev1.ResourceQuota{rq("q", admissiontest.ResourceList("count/pods", "3"), admissiontest.ResourceList("count/pods", "0"))}, pod("p", withLimits),
			"", "count/pods=1"},
	} {
		out, err := Check(admissiontest.Attrs(t, generic.Create, podsGVR, "", tc.pod, nil), tc.quotas)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.used == "" {
			if len(out) != 0 {
				t.Errorf("%s: charged %v, want nothing", tc.name, out[0].Status.Used)
			}
			continue
		}
		if len(out) != 1 || prettyPrint(out[0].Status.Used) != tc.used {
			t.Errorf("%s: charged %v, want %s", tc.name, out, tc.used)
		}
		if tc.quotas[0].Status.Used.Name("pods", resource.DecimalSI).String() == "2" {
			t.Errorf("%s: the quota read from the cache was changed", tc.name)
		}
	}
}

// TestValidateChargesStatus: an admitted create writes the new usage to the quota's status;
// a dry run writes nothing.
func TestValidateChargesStatus(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}
	var p *Plugin
	_, client := admissiontest.Informers(t, func(inf *admission.Informers) { p = New(inf) }, rq("q", admissiontest.ResourceList("configmaps", "2"), admissiontest.ResourceList("configmaps", "1")))
	a := admissiontest.Attrs(t, generic.Create, corev1.SchemeGroupVersion.WithResource("configmaps"), "", cm, nil)
	a.DryRun = true
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()); n != 2 { // the informer's list and watch
		t.Errorf("dry run: %d client actions, want only the informer's 2: %v", n, client.Actions())
	}
	a.DryRun = false
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	q, err := client.CoreV1().ResourceQuotas("ns").Get(context.Background(), "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Status.Used[corev1.ResourceConfigMaps]; got.String() != "2" {
		t.Errorf("used configmaps after the create: %s, want 2", got.String())
	}
}
