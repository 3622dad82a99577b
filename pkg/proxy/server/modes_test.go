package server

import (
	"strings"
	"testing"
	"time"
)

func TestValidateProxyModes(t *testing.T) {
	base := Options{HostnameOverride: "n", MinSyncPeriod: time.Second, SyncPeriod: 30 * time.Second}
	for _, c := range []struct {
		mode, sched, wantErr string
	}{
		{"iptables", "", ""},
		{"ipvs", "", ""},
		{"ipvs", "sh", ""},
		{"ipvs", "fastest", `--ipvs-scheduler "fastest"`},
		{"iptables", "rr", "only used with --proxy-mode ipvs"},
		{"nftables", "", `--proxy-mode "nftables"`},
	} {
		o := base
		o.ProxyMode, o.IPVSScheduler = c.mode, c.sched
		err := o.Validate()
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("mode %q scheduler %q: %v, want %q", c.mode, c.sched, err, c.wantErr)
		}
	}
}
