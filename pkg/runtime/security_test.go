package runtime

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"
)

func TestCheckNonRoot(t *testing.T) {
	for _, tc := range []struct {
		runAs     *int64
		imageUser string
		want      string
	}{
		{nil, "", "image will run as root"},
		{nil, "root", "image will run as root"},
		{nil, "0:0", "image will run as root"},
		{nil, "nobody", "non-numeric user (nobody)"},
		{nil, "1000", ""},
		{ptr.To[int64](0), "1000", "runAsUser breaks non-root policy"},
		{ptr.To[int64](1000), "", ""},
	} {
		err := checkNonRoot(tc.runAs, tc.imageUser)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("runAsUser %v image user %q: %v, want %q", tc.runAs, tc.imageUser, err, tc.want)
		}
	}
	if got := capNames([]string{"net_admin", "CAP_SYS_TIME"}); got[0] != "CAP_NET_ADMIN" || got[1] != "CAP_SYS_TIME" {
		t.Errorf("capNames = %v", got)
	}
}
