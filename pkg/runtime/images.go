package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// normalizeRef turns an image reference as users write it ("busybox") into the full
// name containerd stores images under ("docker.io/library/busybox:latest").
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// ImportImage imports an OCI image-layout (or docker save) tarball and unpacks every
// image in it into the default snapshotter, so containers can be created from them.
// It returns the names of the imported images.
func (r *Runtime) ImportImage(ctx context.Context, tar io.Reader) ([]string, error) {
	ctx = r.nsContext(ctx)
	imgs, err := r.client.Import(ctx, tar)
	if err != nil {
		return nil, fmt.Errorf("importing image tarball: %w", err)
	}
	names := make([]string, 0, len(imgs))
	for _, img := range imgs {
		if err := containerd.NewImage(r.client, img).Unpack(ctx, ""); err != nil {
			return nil, fmt.Errorf("unpacking imported image %s: %w", img.Name, err)
		}
		names = append(names, img.Name)
	}
	return names, nil
}

// EnsureImage makes sure ref is present and unpacked, importing the tarball that tar
// opens only when it is not.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, tar func() (io.ReadCloser, error)) error {
	name, err := normalizeRef(ref)
	if err != nil {
		return err
	}
	ctx = r.nsContext(ctx)
	img, err := r.client.GetImage(ctx, name)
	switch {
	case err == nil:
		return unpackIfNeeded(ctx, img)
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("looking up image %s: %w", name, err)
	}
	rc, err := tar()
	if err != nil {
		return fmt.Errorf("opening the tarball of image %s: %w", name, err)
	}
	defer rc.Close()
	names, err := r.ImportImage(ctx, rc)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	if !slices.Contains(names, name) {
		return fmt.Errorf("the tarball for image %s holds %v instead", name, names)
	}
	return nil
}

// HasImage reports whether an image named ref is stored in containerd.
func (r *Runtime) HasImage(ctx context.Context, ref string) (bool, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return false, err
	}
	_, err = r.client.ImageService().Get(r.nsContext(ctx), name)
	if errdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up image %s: %w", name, err)
	}
	return true, nil
}

// RegistryAuth is a user name and password for one registry (from imagePullSecrets).
type RegistryAuth struct {
	Host     string // host[:port] as image references name it; docker.io for Docker Hub
	Username string
	Password string
}

// PullOptions say how to reach the registries a pull talks to.
type PullOptions struct {
	Auths []RegistryAuth
	// InsecureRegistries are hosts (host[:port]) spoken to over plain HTTP; registries
	// on localhost always are. Every other one is spoken to over HTTPS.
	InsecureRegistries []string
}

// PullImage pulls ref from its registry and unpacks it, logging each layer as it comes,
// and returns the image's size (its content: manifest, config and layers, as CRI's).
func (r *Runtime) PullImage(ctx context.Context, ref string, opts PullOptions) (int64, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return 0, err
	}
	hosts := docker.ConfigureDefaultRegistries(
		docker.WithPlainHTTP(plainHTTP(opts.InsecureRegistries)),
		docker.WithAuthorizer(docker.NewDockerAuthorizer(docker.WithAuthCreds(func(host string) (string, string, error) {
			for _, a := range opts.Auths {
				if a.Host == host || (a.Host == "docker.io" && host == "registry-1.docker.io") {
					return a.Username, a.Password, nil
				}
			}
			return "", "", nil
		}))))
	var layers, size atomic.Int64
	progress := images.HandlerFunc(func(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if images.IsLayerType(desc.MediaType) {
			layers.Add(1)
			size.Add(desc.Size)
			slog.Info("pulling image layer", "image", name, "layer", desc.Digest.String(), "bytes", desc.Size)
		}
		return nil, nil
	})
	start := time.Now()
	img, err := r.client.Pull(r.nsContext(ctx), name,
		containerd.WithPullUnpack,
		containerd.WithResolver(docker.NewResolver(docker.ResolverOptions{Hosts: hosts})),
		containerd.WithImageHandler(progress))
	if err != nil {
		return 0, fmt.Errorf("failed to pull and unpack image %q: %w", name, err) // containerd CRI's words
	}
	slog.Info("pulled image", "image", name, "layers", layers.Load(), "bytes", size.Load(), "took", time.Since(start).Round(time.Millisecond))
	imageSize, err := img.Size(r.nsContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("size of image %s: %w", name, err)
	}
	return imageSize, nil
}

// plainHTTP says which registry hosts are spoken to over HTTP: the insecure ones and localhost.
func plainHTTP(insecure []string) func(host string) (bool, error) {
	return func(host string) (bool, error) {
		if slices.Contains(insecure, host) {
			return true, nil
		}
		return docker.MatchLocalhost(host)
	}
}

// image returns the stored image ref, unpacked and ready for a container snapshot.
func (r *Runtime) image(ctx context.Context, ref string) (containerd.Image, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("image %s is not present on this node: pull or import it first: %w", name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("looking up image %s: %w", name, err)
	}
	if err := unpackIfNeeded(ctx, img); err != nil {
		return nil, err
	}
	return img, nil
}

func unpackIfNeeded(ctx context.Context, img containerd.Image) error {
	unpacked, err := img.IsUnpacked(ctx, "")
	if err != nil {
		return fmt.Errorf("checking whether image %s is unpacked: %w", img.Name(), err)
	}
	if unpacked {
		return nil
	}
	if err := img.Unpack(ctx, ""); err != nil {
		return fmt.Errorf("unpacking image %s: %w", img.Name(), err)
	}
	return nil
}

// Image is an image stored in the runtime's namespace.
type Image struct {
	Name string
	// Ref is the repository and the digest Name points to, as the imageID of a container
	// made from it ("localhost/minik8s/busybox@sha256:..."); names pointing to one digest
	// are one image to CRI.
	Ref       string
	Size      int64 // bytes of its content (compressed layers, config, manifests)
	CreatedAt time.Time
}

// ListImages lists the images of the runtime's namespace.
func (r *Runtime) ListImages(ctx context.Context) ([]Image, error) {
	ctx = r.nsContext(ctx)
	imgs, err := r.client.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]Image, 0, len(imgs))
	for _, img := range imgs {
		size, err := img.Size(ctx)
		if err != nil {
			return nil, fmt.Errorf("size of image %s: %w", img.Name(), err)
		}
		out = append(out, Image{Name: img.Name(), Ref: imageRef(img), Size: size, CreatedAt: img.Metadata().CreatedAt})
	}
	return out, nil
}

// RemoveImage deletes an image; containerd then frees its content and snapshots unless
// another image or namespace still uses them. A missing image is not an error.
func (r *Runtime) RemoveImage(ctx context.Context, name string) error {
	err := r.client.ImageService().Delete(r.nsContext(ctx), name, images.SynchronousDelete())
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing image %s: %w", name, err)
	}
	return nil
}

// ImageFsUsage is how full the filesystem holding containerd's snapshots (unpacked
// images) is, in bytes, as the kubelet measures its image filesystem.
func (r *Runtime) ImageFsUsage(ctx context.Context) (used, capacity uint64, err error) {
	fs, err := r.ImageFs(ctx)
	return fs.Used, fs.Capacity, err
}
