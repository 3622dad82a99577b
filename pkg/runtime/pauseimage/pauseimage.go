// Package pauseimage carries the pause image inside the minilet binary, so a node can
// start pods without any registry. `make build` (the images builder) puts the tarball in
// assets/ before compiling minilet.
package pauseimage

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Ref is the reference of the embedded image.
const Ref = "localhost/minik8s/pause:v1"

// TarballName is the file the images builder copies into assets/.
const TarballName = "pause.tar"

//go:embed assets
var assets embed.FS

// Open reads the pause image, an OCI image-layout tarball (what runtime.EnsureImage imports).
func Open() (io.ReadCloser, error) {
	f, err := assets.Open("assets/" + TarballName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("minilet was built without the embedded pause image; run `make build`")
	}
	if err != nil {
		return nil, fmt.Errorf("reading the embedded pause image: %w", err)
	}
	return f, nil
}
