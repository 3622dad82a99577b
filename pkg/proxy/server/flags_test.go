package server

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The flags' defaults are kube-proxy's and make valid options; a flag given fills its field.
func TestAddFlagsDefaults(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("miniproxy", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--hostname-override", "node-1", "--cluster-cidr", "10.244.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	want := Options{HostnameOverride: "node-1", ClusterCIDR: "10.244.0.0/16", ProxyMode: ModeIPTables,
		MinSyncPeriod: time.Second, SyncPeriod: 30 * time.Second,
		MetricsAddress: "127.0.0.1:10249", HealthzAddress: "0.0.0.0:10256"}
	if o.HostnameOverride != want.HostnameOverride || o.ClusterCIDR != want.ClusterCIDR || o.ProxyMode != want.ProxyMode ||
		o.MinSyncPeriod != want.MinSyncPeriod || o.SyncPeriod != want.SyncPeriod ||
		o.MetricsAddress != want.MetricsAddress || o.HealthzAddress != want.HealthzAddress {
		t.Errorf("options from the flags' defaults = %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
	if o.BindAddressHardFail {
		t.Error("--bind-address-hard-fail is on by default; kube-proxy's is off")
	}
	if err := fs.Parse([]string{"--bind-address-hard-fail"}); err != nil || !o.BindAddressHardFail {
		t.Errorf("--bind-address-hard-fail: %v, option %v", err, o.BindAddressHardFail)
	}
}

// --memory-limit takes a quantity; anything else, or a limit of nothing, is refused by name.
func TestMemoryLimitFlag(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int64 // -1: refused
	}{{"", 0}, {"40Mi", 40 << 20}, {"64M", 64e6}, {"0", -1}, {"-40Mi", -1}, {"forty", -1}} {
		o := Options{HostnameOverride: "node-1", MinSyncPeriod: time.Second, SyncPeriod: 30 * time.Second, MemoryLimit: c.value}
		got, err := o.memoryLimit()
		verr := o.Validate()
		switch {
		case c.want < 0 && (err == nil || verr == nil || !strings.Contains(verr.Error(), "--memory-limit")):
			t.Errorf("--memory-limit %q: memoryLimit %v, Validate %v; want both to refuse it, naming the flag", c.value, err, verr)
		case c.want >= 0 && (err != nil || verr != nil || got != c.want):
			t.Errorf("--memory-limit %q = %d, %v (Validate %v); want %d", c.value, got, err, verr, c.want)
		}
	}
}
