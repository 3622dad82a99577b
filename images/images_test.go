package images

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/ociimage"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestWriteTarballOnlyWhenChanged: an image whose content did not change is not written
// again (coredns.tar takes seconds to compress); any change to it is.
func TestWriteTarballOnlyWhenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tool.tar")
	img := func(data, entrypoint string) ociimage.Image {
		l := baseLayer()
		l.File("/tool", 0o755, []byte(data))
		return ociimage.Image{Name: "localhost/test/tool:v1", Layer: l, Config: ocispec.ImageConfig{Entrypoint: []string{entrypoint}}}
	}
	log := slog.New(slog.DiscardHandler)
	written := func() time.Time {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	if err := writeTarball(log, path, img("v1", "/tool")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := writeTarball(log, path, img("v1", "/tool")); err != nil {
		t.Fatal(err)
	}
	if !written().Equal(old) {
		t.Error("an unchanged image was written again")
	}
	for name, changed := range map[string]ociimage.Image{
		"file":   img("v2", "/tool"),
		"config": img("v1", "/other"),
	} {
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		if err := writeTarball(log, path, changed); err != nil {
			t.Fatal(err)
		}
		if written().Equal(old) {
			t.Errorf("an image with a changed %s was not written", name)
		}
	}
	// A tarball that went missing is written even though its key is still there.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := writeTarball(log, path, img("v1", "/other")); err != nil {
		t.Fatal(err)
	}
	written()
}

// TestAgnhostDefaultsToPause: a pod of the agnhost image that names no command runs
// `agnhost pause`, as upstream's image (ENTRYPOINT /agnhost, CMD pause); the HostPort
// conformance test's host pod relies on it.
func TestAgnhostDefaultsToPause(t *testing.T) {
	imgs, err := e2eImages(busyboxFiles{binary: []byte("busybox")}, []byte("agnhost"), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if img.Name != "registry.k8s.io/e2e-test-images/agnhost:2.63.0" {
			continue
		}
		if got := append(img.Config.Entrypoint, img.Config.Cmd...); !slices.Equal(got, []string{"/agnhost", "pause"}) {
			t.Errorf("agnhost runs %q with no command, want [/agnhost pause]", got)
		}
		return
	}
	t.Fatal("no agnhost:2.63.0 image")
}

// TestBusyboxAppletsInBin: the e2e busybox image has every applet in /bin, as the
// official busybox image (the Sysctls conformance test runs /bin/sysctl).
func TestBusyboxAppletsInBin(t *testing.T) {
	b := busyboxFiles{binary: []byte("busybox"), applets: []string{"bin/sh", "sbin/sysctl", "usr/bin/wget"}}
	if got := b.allInBin().applets; !slices.Equal(got, []string{"bin/sh", "bin/sysctl", "bin/wget"}) {
		t.Errorf("applets %q, want all in bin/", got)
	}
	if b.applets[1] != "sbin/sysctl" {
		t.Error("allInBin changed the original")
	}
}
