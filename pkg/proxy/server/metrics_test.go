package server

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSyncMetricsCarryIPFamily: the sync metrics carry kube-proxy's ip_family label
// (v1.33 on), as dashboards and alerts written for kube-proxy select on it; the informers'
// change counters, which kube-proxy shares between families, do not.
func TestSyncMetricsCarryIPFamily(t *testing.T) {
	m := newMetrics()
	m.synced(syncResult{full: true, duration: time.Second, filterRules: 3, natRules: 9}, nil, time.Now().Add(-time.Second))
	m.synced(syncResult{duration: time.Millisecond}, nil, time.Time{})
	m.synced(syncResult{}, errors.New("iptables-restore failed"), time.Time{})
	m.synced(syncResult{full: true, partialFailed: true}, nil, time.Time{})
	m.serviceChanges.Inc()
	m.endpointChanges.Inc()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ // name: labelled with ip_family
		"kubeproxy_sync_proxy_rules_duration_seconds":                        true,
		"kubeproxy_sync_full_proxy_rules_duration_seconds":                   true,
		"kubeproxy_sync_partial_proxy_rules_duration_seconds":                true,
		"kubeproxy_network_programming_duration_seconds":                     true,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds":                  true,
		"kubeproxy_sync_proxy_rules_iptables_total":                          true,
		"kubeproxy_sync_proxy_rules_iptables_restore_failures_total":         true,
		"kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total": true,
		"kubeproxy_sync_proxy_rules_service_changes_total":                   false,
		"kubeproxy_sync_proxy_rules_endpoint_changes_total":                  false,
	}
	seen := map[string]bool{}
	for _, f := range families {
		labelled, ok := want[f.GetName()]
		if !ok {
			continue
		}
		seen[f.GetName()] = true
		for _, s := range f.GetMetric() {
			family := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "ip_family" {
					family = l.GetValue()
				}
			}
			if labelled && family != "IPv4" || !labelled && family != "" {
				t.Errorf("%s%v: ip_family %q, want it %v (IPv4)", f.GetName(), s.GetLabel(), family, labelled)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	// A partial sync that failed counts as a restore failure too, as in kube-proxy, where
	// it is one.
	if n := testutil.ToFloat64(m.restoreFailures); n != 2 {
		t.Errorf("restore failures %v, want 2 (a failed sync, a failed partial one)", n)
	}
	if n := testutil.ToFloat64(m.partialRestoreFailures); n != 1 {
		t.Errorf("partial restore failures %v, want 1", n)
	}
}

// TestMetricsAddressPaths: the metrics address serves, beside /metrics, kube-proxy's
// /healthz there (the generic "ok", not the proxy's health: that is the healthz address's)
// and /proxyMode, the mode in use.
func TestMetricsAddressPaths(t *testing.T) {
	h := newMetrics().handler(ModeIPVS, false)
	for path, want := range map[string]string{"/healthz": "ok", "/proxyMode": "ipvs"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || rec.Body.String() != want || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" ||
			rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v %q; want 200 text/plain %q", path, rec.Code, rec.Header(), rec.Body, want)
		}
	}
}

// TestNoLocalEndpointsAndQueuedMetrics: kube-proxy's
// kubeproxy_sync_proxy_rules_no_local_endpoints_total{traffic_policy} is the last sync's
// count, and kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds when a change last
// asked for a sync.
func TestNoLocalEndpointsAndQueuedMetrics(t *testing.T) {
	m := newMetrics()
	before := float64(time.Now().Unix())
	m.queued()
	m.synced(syncResult{noLocalInternal: 2, noLocalExternal: 1}, nil, time.Time{})
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				if l.GetName() == "traffic_policy" {
					name += "/" + l.GetValue()
				}
			}
			got[name] = s.GetGauge().GetValue()
		}
	}
	if got["kubeproxy_sync_proxy_rules_no_local_endpoints_total/internal"] != 2 || got["kubeproxy_sync_proxy_rules_no_local_endpoints_total/external"] != 1 {
		t.Errorf("no local endpoints: %v", got)
	}
	if q := got["kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"]; q < before {
		t.Errorf("last queued %v, want at least %v", q, before)
	}
}
