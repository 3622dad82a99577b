package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func testImage() Image {
	l := NewLayer()
	l.Dir("/tmp", 0o1777)
	l.File("/usr/bin/tool", 0o755, []byte("#!/bin/sh\necho hi\n"))
	l.Symlink("bin/sh", "/usr/bin/tool")
	return Image{
		Name:   "localhost/test/tool:v2",
		Layer:  l,
		Config: ocispec.ImageConfig{Entrypoint: []string{"/usr/bin/tool"}, Env: []string{"PATH=/usr/bin"}},
	}
}

// readTar returns every entry of a tar archive by name, with its content.
func readTar(t *testing.T, r io.Reader) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	headers, contents := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return headers, contents
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers[hdr.Name], contents[hdr.Name] = hdr, data
	}
}

func blob(t *testing.T, files map[string][]byte, d digest.Digest) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+d.Encoded()]
	if !ok {
		t.Fatalf("blob %s missing from the layout", d)
	}
	if digest.FromBytes(data) != d {
		t.Fatalf("blob %s has digest %s", d, digest.FromBytes(data))
	}
	return data
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func TestWriteLayout(t *testing.T) {
	var buf bytes.Buffer
	manifestDesc, err := WriteLayout(&buf, testImage())
	if err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, &buf)

	var layout ocispec.ImageLayout
	decode(t, files["oci-layout"], &layout)
	if layout.Version != ocispec.ImageLayoutVersion {
		t.Errorf("oci-layout = %+v", layout)
	}
	var index ocispec.Index
	decode(t, files["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != manifestDesc.Digest {
		t.Fatalf("index = %+v, want the manifest %s", index, manifestDesc.Digest)
	}
	ann := index.Manifests[0].Annotations
	if ann[AnnotationImageName] != "localhost/test/tool:v2" || ann[ocispec.AnnotationRefName] != "v2" {
		t.Errorf("index annotations = %v", ann)
	}

	var manifest ocispec.Manifest
	decode(t, blob(t, files, manifestDesc.Digest), &manifest)
	var config ocispec.Image
	decode(t, blob(t, files, manifest.Config.Digest), &config)
	if config.OS != "linux" || config.Config.Entrypoint[0] != "/usr/bin/tool" {
		t.Errorf("config = %+v", config)
	}
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerGzip {
		t.Fatalf("manifest layers = %+v", manifest.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, manifest.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	layerTar, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != digest.FromBytes(layerTar) {
		t.Errorf("diff_ids = %v, want the digest of the uncompressed layer %s", config.RootFS.DiffIDs, digest.FromBytes(layerTar))
	}

	headers, contents := readTar(t, bytes.NewReader(layerTar))
	for name, want := range map[string]struct {
		typ  byte
		mode int64
	}{
		"tmp/":         {tar.TypeDir, 0o1777},
		"usr/":         {tar.TypeDir, 0o755}, // created as a parent
		"usr/bin/":     {tar.TypeDir, 0o755},
		"usr/bin/tool": {tar.TypeReg, 0o755},
		"bin/sh":       {tar.TypeSymlink, 0o777},
		"bin/":         {tar.TypeDir, 0o755},
	} {
		hdr, ok := headers[name]
		if !ok {
			t.Errorf("layer lacks %s", name)
			continue
		}
		if hdr.Typeflag != want.typ || hdr.Mode != want.mode || !hdr.ModTime.Equal(Epoch) || hdr.Uid != 0 {
			t.Errorf("%s: type %c mode %o mtime %s uid %d; want type %c mode %o mtime %s uid 0",
				name, hdr.Typeflag, hdr.Mode, hdr.ModTime, hdr.Uid, want.typ, want.mode, Epoch)
		}
	}
	if headers["bin/sh"].Linkname != "/usr/bin/tool" || string(contents["usr/bin/tool"]) != "#!/bin/sh\necho hi\n" {
		t.Errorf("symlink target %q, file content %q", headers["bin/sh"].Linkname, contents["usr/bin/tool"])
	}
}

func TestWriteLayoutIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := WriteLayout(&a, testImage()); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLayout(&b, testImage()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two writes of the same image differ")
	}
}

func TestWriteLayoutNeedsATag(t *testing.T) {
	img := testImage()
	for _, name := range []string{"localhost/test/tool", "Not A Name:v1"} {
		img.Name = name
		if _, err := WriteLayout(io.Discard, img); err == nil {
			t.Errorf("WriteLayout accepted the image name %q", name)
		}
	}
}

func TestDiffIDNamesTheContent(t *testing.T) {
	id := func(img Image) digest.Digest {
		t.Helper()
		d, err := img.Layer.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	same, changed := testImage(), testImage()
	changed.Layer.File("/usr/bin/tool", 0o755, []byte("#!/bin/sh\necho bye\n"))
	if id(testImage()) != id(same) {
		t.Error("equal layers have different DiffIDs")
	}
	if id(testImage()) == id(changed) {
		t.Error("a changed file kept the DiffID")
	}
	// The DiffID is what the image config records for the layer.
	var buf bytes.Buffer
	manifest, err := WriteLayout(&buf, testImage())
	if err != nil {
		t.Fatal(err)
	}
	_, files := readTar(t, &buf)
	var m ocispec.Manifest
	decode(t, blob(t, files, manifest.Digest), &m)
	var cfg ocispec.Image
	decode(t, blob(t, files, m.Config.Digest), &cfg)
	if cfg.RootFS.DiffIDs[0] != id(testImage()) {
		t.Errorf("config diff_ids %v, DiffID %s", cfg.RootFS.DiffIDs, id(testImage()))
	}
}
