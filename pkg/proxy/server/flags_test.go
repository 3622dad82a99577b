package server

import (
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
}
