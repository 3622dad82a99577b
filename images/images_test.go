package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/ociimage"
	"github.com/opencontainers/go-digest"
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
	imgs, err := e2eImages(busyboxFiles{binary: []byte("busybox")}, []byte("agnhost"), nil, nil, nil, nil)
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

// TestNonewprivsSetuidRoot: the nonewprivs image's tarball, as minilet imports it, holds
// nnp owned by root with the setuid bit (without it the AllowPrivilegeEscalation tests
// could not tell no_new_privs from its absence), and a pod naming no command runs it
// from PATH, as upstream's CMD ["nnp"].
func TestNonewprivsSetuidRoot(t *testing.T) {
	imgs, err := e2eImages(busyboxFiles{binary: []byte("busybox"), applets: []string{"bin/sh"}}, nil, nil, nil, []byte("nnp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(imgs, func(img ociimage.Image) bool { return img.Name == "registry.k8s.io/e2e-test-images/nonewprivs:1.4" })
	if i < 0 {
		t.Fatal("no nonewprivs:1.4 image")
	}
	var layout bytes.Buffer
	if _, err := ociimage.WriteLayout(&layout, imgs[i]); err != nil {
		t.Fatal(err)
	}
	config, layer := readLayout(t, layout.Bytes())
	if !slices.Equal(config.Cmd, []string{"nnp"}) || len(config.Entrypoint) != 0 || !slices.Contains(config.Env, defaultPath) ||
		!strings.Contains(defaultPath, ":/usr/local/bin:") {
		t.Errorf("config runs %q %q with %q, want nnp found in /usr/local/bin", config.Entrypoint, config.Cmd, config.Env)
	}
	hdr, ok := layer["usr/local/bin/nnp"]
	switch {
	case !ok:
		t.Fatal("no usr/local/bin/nnp in the layer")
	case hdr.Typeflag != tar.TypeReg || hdr.Uid != 0 || hdr.Gid != 0:
		t.Errorf("nnp is type %c owned by %d:%d, want a regular file of root's", hdr.Typeflag, hdr.Uid, hdr.Gid)
	case hdr.FileInfo().Mode()&(os.ModeSetuid|os.ModeSetgid) != os.ModeSetuid|os.ModeSetgid || hdr.Mode&0o111 != 0o111:
		t.Errorf("nnp has mode %v, want setuid, setgid and executable by all", hdr.FileInfo().Mode())
	}
	if _, ok := layer["bin/sh"]; !ok {
		t.Error("no shell in the nonewprivs image (upstream's is Alpine)")
	}
}

// readLayout returns the config and the layer's entries, by path, of a single-image
// OCI layout tarball.
func readLayout(t *testing.T, data []byte) (ocispec.ImageConfig, map[string]*tar.Header) {
	t.Helper()
	files := map[string][]byte{}
	readTar(t, bytes.NewReader(data), func(hdr *tar.Header, content []byte) { files[hdr.Name] = content })
	blob := func(d digest.Digest, v any) []byte {
		t.Helper()
		content, ok := files["blobs/sha256/"+d.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d)
		}
		if v != nil {
			if err := json.Unmarshal(content, v); err != nil {
				t.Fatal(err)
			}
		}
		return content
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests", err, len(index.Manifests))
	}
	var manifest ocispec.Manifest
	blob(index.Manifests[0].Digest, &manifest)
	var image ocispec.Image
	blob(manifest.Config.Digest, &image)
	if len(manifest.Layers) != 1 {
		t.Fatalf("%d layers, want 1", len(manifest.Layers))
	}
	gz, err := gzip.NewReader(bytes.NewReader(blob(manifest.Layers[0].Digest, nil)))
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]*tar.Header{}
	readTar(t, gz, func(hdr *tar.Header, _ []byte) { entries[strings.TrimSuffix(hdr.Name, "/")] = hdr })
	return image.Config, entries
}

func readTar(t *testing.T, r io.Reader, each func(*tar.Header, []byte)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		each(hdr, content)
	}
}

// TestShellIsBash: the /bin/sh of our images with busybox is the bash of Debian's
// bash-static, not busybox's ash (busyboxFiles says why), and the suite's busybox image has
// it beside nettools' sh (suiteShell); that bash run as sh passes a
// variable whose name is no shell identifier on to the commands it runs, as upstream
// busybox's ash does (the ConfigMap and Secret envFrom conformance tests run `sh -c env`
// and look for `data-1=value-1`), and runs the wget on PATH, not an applet.
func TestShellIsBash(t *testing.T) {
	bash, err := os.ReadFile(DefaultBashStatic)
	if err != nil {
		t.Fatalf("%v (make test installs bash-static)", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wget"), []byte("#!/bin/bash-static\necho our wget\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command(DefaultBashStatic, "-c", "env; wget")
	sh.Args[0] = "sh"
	sh.Env = []string{"data-1=value-1", "PATH=" + dir + ":/usr/bin:/bin"}
	if out, err := sh.Output(); err != nil || !strings.Contains(string(out), "data-1=value-1\n") || !strings.HasSuffix(string(out), "our wget\n") {
		t.Errorf("sh -c 'env; wget': %v, output %q lacks data-1=value-1 or our wget's line", err, out)
	}

	busybox := busyboxFiles{binary: []byte("busybox"), applets: []string{"bin/sh", "bin/env"}, sh: bash}
	user := ociimage.NewLayer()
	busybox.addTo(user)
	imgs, err := e2eImages(busybox, nil, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(imgs, func(img ociimage.Image) bool { return img.Name == "registry.k8s.io/e2e-test-images/busybox:1.37.0-1" })
	if i < 0 {
		t.Fatal("no busybox:1.37.0-1 image")
	}
	files := func(l *ociimage.Layer) map[string]*tar.Header {
		var layout bytes.Buffer
		if _, err := ociimage.WriteLayout(&layout, ociimage.Image{Name: "localhost/x:v1", Layer: l}); err != nil {
			t.Fatal(err)
		}
		_, layer := readLayout(t, layout.Bytes())
		return layer
	}
	layer := files(user)
	if hdr, ok := layer["bin/sh"]; !ok || hdr.Typeflag != tar.TypeReg || hdr.Size != int64(len(bash)) {
		t.Errorf("bin/sh is %+v, want bash (%d bytes)", hdr, len(bash))
	}
	if hdr, ok := layer["bin/env"]; !ok || hdr.Typeflag != tar.TypeSymlink {
		t.Errorf("bin/env is %+v, want busybox's applet", hdr)
	}
	// The suite's busybox has nettools' sh: ash, or the bash beside it (suiteShell).
	layer = files(imgs[i].Layer)
	if hdr, ok := layer["bin/sh"]; !ok || hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != "/usr/bin/nettools" {
		t.Errorf("e2e busybox: bin/sh is %+v, want a link to /usr/bin/nettools", hdr)
	}
	if hdr, ok := layer["bin/bash"]; !ok || hdr.Typeflag != tar.TypeReg || hdr.Size != int64(len(bash)) {
		t.Errorf("e2e busybox: bin/bash is %+v, want bash (%d bytes)", hdr, len(bash))
	}
}

// TestUpdateDemoImages: nautilus:1.8 and kitten:1.8 are agnhost serving the files of / on
// port 80 (test-webserver), with data.json naming their picture beside it, as upstream's.
func TestUpdateDemoImages(t *testing.T) {
	imgs, err := e2eImages(busyboxFiles{binary: []byte("busybox")}, []byte("agnhost"), nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nautilus", "kitten"} {
		i := slices.IndexFunc(imgs, func(img ociimage.Image) bool { return img.Name == "registry.k8s.io/e2e-test-images/"+name+":1.8" })
		if i < 0 {
			t.Fatalf("no %s:1.8 image", name)
		}
		if got := append(imgs[i].Config.Entrypoint, imgs[i].Config.Cmd...); !slices.Equal(got, []string{"/agnhost", "test-webserver"}) {
			t.Errorf("%s runs %q, want [/agnhost test-webserver]", name, got)
		}
		var layout bytes.Buffer
		if _, err := ociimage.WriteLayout(&layout, imgs[i]); err != nil {
			t.Fatal(err)
		}
		_, layer := readLayout(t, layout.Bytes())
		for _, f := range []string{"agnhost", "data.json", name + ".jpg"} {
			if hdr, ok := layer[f]; !ok || hdr.Typeflag != tar.TypeReg {
				t.Errorf("%s: no file /%s", name, f)
			}
		}
		if want := len(`{"image": "` + name + `.jpg"}` + "\n"); layer["data.json"] == nil || layer["data.json"].Size != int64(want) {
			t.Errorf("%s: data.json is not the %d bytes naming %s.jpg", name, want, name)
		}
	}
}
