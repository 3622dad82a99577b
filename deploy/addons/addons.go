// Package addons holds the cluster add-ons `make up` and minilab install (the manifests
// beside this file, embedded for minilab) and what installing them takes.
package addons

import (
	"bytes"
	_ "embed"
)

// CoreDNS is coredns.yaml: cluster DNS at the kube-dns Service.
//
//go:embed coredns.yaml
var CoreDNS []byte

// Cluster DNS settings the CoreDNS add-on serves: minilet's --cluster-dns and
// --cluster-domain must match them.
const (
	ClusterDNSIP  = "10.96.0.10"
	ClusterDomain = "cluster.local"
)

// CoreDNS's credentials until ServiceAccount tokens exist: a kubeconfig in this Secret
// (key "kubeconfig") with a client certificate for the ServiceAccount's user name, which
// the add-on's ClusterRoleBinding covers.
const (
	CoreDNSSecret = "coredns-kubeconfig"
	CoreDNSUser   = "system:serviceaccount:kube-system:coredns"
)

// CoreDNSGroups are the groups a ServiceAccount token of CoreDNS would carry.
var CoreDNSGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}

//go:embed storage.yaml
var storageClass []byte

// StoragePathPlaceholder stands for the volumes' directory in storage.yaml.
const StoragePathPlaceholder = "@STORAGE_PATH@"

// StorageClass is storage.yaml, the default StorageClass, with its volumes under dir on
// each node.
func StorageClass(dir string) []byte {
	return bytes.ReplaceAll(storageClass, []byte(StoragePathPlaceholder), []byte(dir))
}
