package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
)

// statusIDPrefix is how a pod's status names this runtime in a containerID.
const statusIDPrefix = "containerd://"

// StatusID is how a pod's status names container id ("containerd://ID"), as the kubelet
// names a CRI container.
func StatusID(id string) string { return statusIDPrefix + id }

// IDFromStatus is the container id a pod status's containerID names.
func IDFromStatus(containerID string) string { return strings.TrimPrefix(containerID, statusIDPrefix) }

// containerd identifiers: alphanumerics separated by single '.', '_' or '-', at most 76.
const maxIDLength = 76

var separatorRuns = regexp.MustCompile(`[^A-Za-z0-9]+`)

// newContainerID returns a readable unique id: the first 8 characters of the pod UID,
// the container name and a random suffix, e.g. 3f2a9c1b-web-5e0d1a.
func newContainerID(podUID, name string) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix) // crypto/rand.Read never fails on Linux
	uid := idPart(podUID)
	if len(uid) > 8 {
		uid = strings.TrimRight(uid[:8], "-")
	}
	tail := hex.EncodeToString(suffix)
	room := maxIDLength - len(uid) - len(tail) - 2
	n := idPart(name)
	if len(n) > room {
		n = strings.TrimRight(n[:room], "-")
	}
	parts := slices.DeleteFunc([]string{uid, n, tail}, func(p string) bool { return p == "" })
	return strings.Join(parts, "-")
}

// idPart reduces s to alphanumerics joined by single dashes.
func idPart(s string) string {
	return strings.Trim(separatorRuns.ReplaceAllString(s, "-"), "-")
}
