package ociimage

import (
	"bytes"
	"compress/gzip"
	_ "crypto/sha256" // registers the digest algorithm go-digest uses
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"runtime"
	"slices"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// AnnotationImageName is the index annotation containerd's importer names images by.
const AnnotationImageName = "io.containerd.image.name"

// Image is one single-layer image for the platform we run on (linux/GOARCH).
type Image struct {
	// Name is the image reference, e.g. localhost/minik8s/pause:v1. It must carry a tag.
	Name   string
	Layer  *Layer
	Config ocispec.ImageConfig
}

// WriteLayout writes img to w as an OCI image-layout tarball (oci-layout, index.json,
// blobs/sha256/...) and returns the descriptor of its manifest.
func WriteLayout(w io.Writer, img Image) (ocispec.Descriptor, error) {
	named, err := reference.ParseNormalizedNamed(img.Name)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("image name %q: %w", img.Name, err)
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		return ocispec.Descriptor{}, fmt.Errorf("image name %q has no tag", img.Name)
	}

	blobs := map[digest.Digest][]byte{}
	addBlob := func(mediaType string, data []byte) ocispec.Descriptor {
		d := digest.FromBytes(data)
		blobs[d] = data
		return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
	}
	addJSON := func(mediaType string, v any) (ocispec.Descriptor, error) {
		data, err := json.Marshal(v)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("encoding %s: %w", mediaType, err)
		}
		return addBlob(mediaType, data), nil
	}

	layerTar, err := img.Layer.tar()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layerGz, err := gzipBytes(layerTar)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layerDesc := addBlob(ocispec.MediaTypeImageLayerGzip, layerGz)

	platform := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	created := Epoch
	configDesc, err := addJSON(ocispec.MediaTypeImageConfig, ocispec.Image{
		Created:  &created,
		Platform: platform,
		Config:   img.Config,
		RootFS: ocispec.RootFS{
			Type:    "layers",
			DiffIDs: []digest.Digest{digest.FromBytes(layerTar)},
		},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	manifestDesc, err := addJSON(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	manifestDesc.Platform = &platform
	manifestDesc.Annotations = map[string]string{
		AnnotationImageName:       named.String(),
		ocispec.AnnotationRefName: tagged.Tag(),
	}

	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifestDesc},
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encoding index: %w", err)
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("encoding oci-layout: %w", err)
	}

	// The layout archive is itself just a tree of files, so Layer writes it too.
	files := NewLayer()
	files.File(ocispec.ImageLayoutFile, 0o644, layout)
	files.File(ocispec.ImageIndexFile, 0o644, index)
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		files.File(path.Join(ocispec.ImageBlobsDir, d.Algorithm().String(), d.Encoded()), 0o644, blobs[d])
	}
	archive, err := files.tar()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if _, err := w.Write(archive); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("writing layout of %s: %w", img.Name, err)
	}
	return manifestDesc, nil
}

// gzipBytes compresses without a file name or time in the header, so equal input gives
// equal output.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("compressing layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing layer: %w", err)
	}
	return buf.Bytes(), nil
}
