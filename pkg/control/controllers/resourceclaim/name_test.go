package resourceclaim

import "testing"

// A claim's generated name is POD-CLAIM-; too long, both parts are cut in proportion (and
// the trailing hyphen goes), as kube's controller cuts them.
func TestGenerateName(t *testing.T) {
	long := "a-very-long-pod-name-made-by-a-statefulset-or-job-0123456789"
	for _, tc := range []struct{ pod, claim, want string }{
		{"web", "gpu", "web-gpu-"},
		{long, "accelerator", "a-very-long-pod-name-made-by-a-statefulset-or--accelera"}, // 60*57/73 and 11*57/73 characters
	} {
		got := generateName(tc.pod, tc.claim)
		if got != tc.want || len(got) > maxBaseLen {
			t.Errorf("generateName(%q, %q) = %q (%d), want %q", tc.pod, tc.claim, got, len(got), tc.want)
		}
	}
}
