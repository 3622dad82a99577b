package apiserver

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The pod field labels kube-apiserver's v1 conversion takes beyond the selectable fields:
// spec.host, old clients' name of spec.nodeName, selects by the node; status.podIPs is
// accepted but, as the pod's selectable fields do not carry it, matches only an empty value.
func TestPodFieldLabelConversion(t *testing.T) {
	s, _ := newCachedServer(t)
	h := s.Handler()
	for _, node := range []string{"n1", "n2"} {
		pod := podNamed("on-"+node, "a")
		pod.Spec.NodeName = node
		if w := do(t, h, "POST", "/api/v1/namespaces/default/pods", pod); w.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", w.Code, w.Body)
		}
	}
	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"spec.host=n1", []string{"on-n1"}},
		{"spec.host!=n1", []string{"on-n2"}},
		{"status.podIPs=10.0.0.1", nil},
		{"status.podIPs=", []string{"on-n1", "on-n2"}},
	} {
		w := do(t, h, "GET", "/api/v1/namespaces/default/pods?fieldSelector="+url.QueryEscape(tc.selector), nil)
		if w.Code != http.StatusOK {
			t.Errorf("%s: %d %s", tc.selector, w.Code, w.Body)
			continue
		}
		var list corev1.PodList
		if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Name)
		}
		if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("%s: listed %v, want %v", tc.selector, got, tc.want)
		}
	}
}
