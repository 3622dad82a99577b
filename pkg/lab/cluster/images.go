package cluster

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// LoadImage imports an image archive into every node of the lab, as `kind load
// image-archive` does: path is an OCI image-layout or docker-archive tarball (what
// `docker save` writes), or an OCI image-layout directory. It returns the image names.
func LoadImage(ctx context.Context, l *lab.Lab, path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("image archive: %w", err)
	}
	var names []string
	for _, n := range l.Nodes {
		var r io.ReadCloser
		if fi.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "index.json")); err != nil {
				return nil, fmt.Errorf("image directory %s is no OCI image layout (no index.json)", path)
			}
			r = tarDir(path)
		} else if r, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("image archive: %w", err)
		}
		names, err = importInto(ctx, l, n, r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("load %s into %s: %w", path, n.Name, err)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("load %s: the archive names no image (an OCI index needs the io.containerd.image.name or org.opencontainers.image.ref.name annotation)", path)
		}
	}
	return names, nil
}

// importInto imports one archive into node n's containerd namespace and unpacks it.
func importInto(ctx context.Context, l *lab.Lab, n lab.Node, archive io.Reader) ([]string, error) {
	rt, err := runtime.New(ctx, ContainerdSocket(l), ContainerdNamespace(n))
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.ImportImage(ctx, archive)
}

// ListImages lists the images of every node, by node name.
func ListImages(ctx context.Context, l *lab.Lab) (map[string][]runtime.Image, error) {
	out := map[string][]runtime.Image{}
	for _, n := range l.Nodes {
		rt, err := runtime.New(ctx, ContainerdSocket(l), ContainerdNamespace(n))
		if err != nil {
			return nil, err
		}
		imgs, err := rt.ListImages(ctx)
		rt.Close()
		if err != nil {
			return nil, fmt.Errorf("images of %s: %w", n.Name, err)
		}
		out[n.Name] = imgs
	}
	return out, nil
}

// tarDir streams the tree under dir as a tar archive, as containerd's importer reads it.
func tarDir(dir string) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() && !fi.IsDir() {
				return fmt.Errorf("%s: only files and directories belong in an image layout", path)
			}
			hdr, err := tar.FileInfoHeader(fi, "")
			if err != nil {
				return err
			}
			hdr.Name = filepath.ToSlash(rel)
			if fi.IsDir() {
				hdr.Name += "/"
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if fi.IsDir() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
