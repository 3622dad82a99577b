// Package templatehash names a pod template as Kubernetes' controllers do (ComputeHash):
// FNV-32a of the template's deep printout and a collision count, as safe characters. The
// deployment controller names ReplicaSets with it, the daemonset controller its revisions.
package templatehash

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Of hashes t; a non-nil collisionCount is mixed in to get away from a namesake.
func Of(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*t))
	if collisionCount != nil {
		b := make([]byte, 4)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}
