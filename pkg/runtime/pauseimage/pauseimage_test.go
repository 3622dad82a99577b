package pauseimage

import (
	"archive/tar"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestTarball(t *testing.T) {
	f, err := Open()
	if err != nil {
		// Not built yet (`make build` copies it in): the error must say what to do.
		if !strings.Contains(err.Error(), "make build") {
			t.Errorf("error without the embedded image = %q; it should tell to run make build", err)
		}
		testenv.Missing(t, "minilet's pause image is not embedded in this build (make build embeds it): %v", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("the embedded tarball has no readable index.json: %v", err)
		}
		if hdr.Name != ocispec.ImageIndexFile {
			continue
		}
		raw, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		var index ocispec.Index
		if err := json.Unmarshal(raw, &index); err != nil {
			t.Fatal(err)
		}
		if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != Ref {
			t.Errorf("embedded index = %s; want one manifest named %s", raw, Ref)
		}
		return
	}
}
