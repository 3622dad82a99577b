package discovery

import (
	"runtime/debug"
	"testing"

	"k8s.io/apimachinery/pkg/version"
)

// TestVersionCarriesTheBuildsCommit: kubectl version -o yaml shows the commit, tree state and
// date of the build as kube-apiserver's (stamped there by ldflags, here by go build's VCS
// settings); a binary built without them (go test's) leaves the fields empty.
func TestVersionCarriesTheBuildsCommit(t *testing.T) {
	var info version.Info
	stampBuild(&info, []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "e48c52a0123456789abcdef0123456789abcdef0"},
		{Key: "vcs.time", Value: "2026-11-30T12:34:56Z"}, {Key: "vcs.modified", Value: "true"},
	})
	want := version.Info{GitCommit: "e48c52a0123456789abcdef0123456789abcdef0", GitTreeState: "dirty", BuildDate: "2026-11-30T12:34:56Z"}
	if info != want {
		t.Errorf("stamped %#v, want %#v", info, want)
	}
	info = version.Info{}
	stampBuild(&info, []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}})
	if info.GitCommit != "abc" || info.GitTreeState != "clean" {
		t.Errorf("clean tree: %#v", info)
	}
	info = version.Info{}
	stampBuild(&info, nil)
	if info != (version.Info{}) {
		t.Errorf("no VCS settings: %#v", info)
	}
}
