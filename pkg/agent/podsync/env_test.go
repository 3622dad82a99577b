package podsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestWithSubPaths: a subPathExpr is expanded with the container's environment into the
// subPath, as the kubelet does; a variable that is missing or empty is an error naming
// it, so the container waits in CreateContainerConfigError until the value is there.
func TestWithSubPaths(t *testing.T) {
	c := &corev1.Container{Name: "app", VolumeMounts: []corev1.VolumeMount{
		{Name: "work", MountPath: "/sub", SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"},
		{Name: "work", MountPath: "/all"},
		{Name: "work", MountPath: "/lit", SubPathExpr: "a$$b"},
	}}
	got, err := withSubPaths(c, []string{"POD_NAME=foo", "ANNOTATION=mypath"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"mypath/foo", "", "a$b"} {
		if vm := got.VolumeMounts[i]; vm.SubPath != want || vm.SubPathExpr != "" {
			t.Errorf("mount %d: subPath %q, subPathExpr %q; want %q and none", i, vm.SubPath, vm.SubPathExpr, want)
		}
	}
	if c.VolumeMounts[0].SubPathExpr == "" {
		t.Error("the pod's own spec was changed")
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"POD_NAME=foo"}, "missing value for ANNOTATION"},
		{[]string{"POD_NAME=foo", "ANNOTATION="}, "missing value for ANNOTATION"},
		{nil, "missing value for ANNOTATION, POD_NAME"},
	} {
		if _, err := withSubPaths(c, tc.env); err == nil || err.Error() != tc.want {
			t.Errorf("env %q: error %v, want %q", tc.env, err, tc.want)
		}
	}
}
