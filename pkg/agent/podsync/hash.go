package podsync

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// containerHash fingerprints a container's spec, like the kubelet's
// HashContainer: a running container whose hash differs from its spec's was
// made from an older spec and is restarted. The hash is stored with the
// container, so it survives a minilet restart.
func containerHash(c *corev1.Container) string {
	// A corev1.Container always marshals, deterministically (map keys sorted).
	data, _ := json.Marshal(c)
	h := fnv.New32a()
	h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
