// Command etcdctl is etcd's client, built from the published go.etcd.io/etcd/etcdctl/v3 module
// at the same version as the server (`make etcd` writes bin/etcdctl beside bin/etcd), so the
// HA lab guide can list members and endpoint status without a download.
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() { ctlv3.MustStart() }
