package server

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

// /healthz answers kube-proxy's ProxyHealth: lastUpdated, currentTime, nodeEligible,
// healthy and the per-family status, 503 before the first sync and when a change waited
// two sync periods.
func TestHealthzAnswersKubeProxysFields(t *testing.T) {
	h := &health{period: time.Second}
	get := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		h.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers %v: want kube-proxy's X-Content-Type-Options: nosniff", rec.Header())
		}
		return rec.Code, body
	}
	if code, body := get(); code != 503 || body["healthy"] != false {
		t.Errorf("before the first sync: %d %v", code, body)
	}
	h.synced(time.Now())
	code, body := get()
	status, _ := body["status"].(map[string]any)
	v4, _ := status["IPv4"].(map[string]any)
	if code != 200 || body["healthy"] != true || body["nodeEligible"] != true || body["lastUpdated"] == nil || body["currentTime"] == nil ||
		v4["healthy"] != true || v4["lastUpdated"] == nil || body["lastUpdated"] != body["currentTime"] {
		t.Errorf("after a sync: %d %v", code, body)
	}
	h.queued(time.Now().Add(-3 * time.Second))
	if code, body := get(); code != 503 || body["healthy"] != false || h.healthy(time.Now()) {
		t.Errorf("with a change waiting 3 sync periods: %d %v", code, body)
	}
}
