package nodestatus

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// The kubelet's limits on status.images: --node-status-max-images (50 by default) and
// nodestatus.MaxNamesPerImageInNodeStatus.
const (
	maxImages        = 50
	maxNamesPerImage = 5
)

// containerImages is the node's status.images from the runtime's images, as the kubelet's
// Images setter writes it from CRI's list: the names pointing to one digest are one image,
// named by its repo digests then its tags (each sorted), at most maxNamesPerImage names;
// the largest images first (the image manager's order), at most maxImages of them.
func containerImages(imgs []runtime.Image) []corev1.ContainerImage {
	type image struct {
		digests, tags []string
		size          int64
	}
	byRef := map[string]*image{}
	var order []*image
	for _, img := range imgs {
		key := img.Ref
		if key == "" {
			key = img.Name
		}
		if i := strings.LastIndex(key, "@"); i >= 0 {
			key = key[i+1:]
		}
		im := byRef[key]
		if im == nil {
			im = &image{size: img.Size}
			byRef[key] = im
			order = append(order, im)
		}
		switch {
		case strings.Contains(img.Name, "@"):
			im.digests = append(im.digests, img.Name)
		default:
			im.tags = append(im.tags, img.Name)
			if img.Ref != "" {
				im.digests = append(im.digests, img.Ref)
			}
		}
	}
	out := make([]corev1.ContainerImage, 0, len(order))
	for _, im := range order {
		slices.Sort(im.digests)
		slices.Sort(im.tags)
		names := append(slices.Compact(im.digests), slices.Compact(im.tags)...)
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: im.size})
	}
	slices.SortStableFunc(out, func(a, b corev1.ContainerImage) int {
		if c := cmp.Compare(b.SizeBytes, a.SizeBytes); c != 0 {
			return c
		}
		return cmp.Compare(a.Names[0], b.Names[0])
	})
	if len(out) > maxImages {
		out = out[:maxImages]
	}
	return out
}
