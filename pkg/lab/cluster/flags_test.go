package cluster

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// minilab up's defaults validate; each bad value is refused naming its flag.
func TestUpFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" when valid
	}{
		{nil, ""},
		{[]string{"--pod-network", "vxlan", "--nodes", "3"}, ""},
		{[]string{"--nodes", "0"}, "--nodes"},
		{[]string{"--segments", "0"}, "--segments"},
		{[]string{"--pod-network", "flannel"}, "--pod-network"},
		{[]string{"--eviction-hard", "memory.available<256Mi"}, ""},
		{[]string{"--eviction-hard", "memory.available>256Mi"}, "--eviction-hard"},
		{[]string{"--eviction-hard", "disk.free<1Gi"}, "--eviction-hard"},
		{[]string{"--node-memory", "768Mi"}, ""},
		{[]string{"--eviction-pressure-transition-period", "20s"}, ""},
		{[]string{"--eviction-pressure-transition-period", "-1s"}, "--eviction-pressure-transition-period"},
		{[]string{"--node-memory", "lots"}, "--node-memory"},
		{[]string{"--node-memory", "64Mi"}, "--node-memory"},
		{[]string{"--control-planes", "3"}, ""},
		{[]string{"--control-planes", "2"}, "--control-planes"},
		{[]string{"--control-planes", "7"}, "--control-planes"},
	} {
		var o Options
		fs := pflag.NewFlagSet("up", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: Validate() = %v, want an error naming %q", tc.args, err, tc.err)
		}
	}
}
