package controlplane

import (
	"strings"
	"testing"
)

func TestEnabledControllers(t *testing.T) {
	for _, tc := range []struct {
		flag []string
		want map[string]bool
	}{
		{[]string{"*"}, map[string]bool{"namespace": true, "garbagecollector": true}},
		{[]string{"*", "-garbagecollector"}, map[string]bool{"namespace": true, "garbagecollector": false}},
		{[]string{"namespace"}, map[string]bool{"namespace": true, "garbagecollector": false}},
		{nil, map[string]bool{"namespace": true, "garbagecollector": true}},
		{[]string{"-namespace"}, map[string]bool{"namespace": false, "garbagecollector": false}},
		{[]string{"*", "-replicaset"}, map[string]bool{"replicaset": false, "replicationcontroller": true}},
	} {
		got, err := enabledControllers(tc.flag)
		if err != nil {
			t.Fatalf("%v: %v", tc.flag, err)
		}
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("%v: %s enabled=%v, want %v", tc.flag, name, got[name], want)
			}
		}
	}
	for _, bad := range [][]string{{"*", "-nosuch"}, {"nosuch"}} {
		if _, err := enabledControllers(bad); err == nil || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("%v: err %v, want one naming nosuch", bad, err)
		}
	}
}
