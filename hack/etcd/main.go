// Command etcd is the etcd server, built from the published go.etcd.io/etcd/server/v3 module
// at the version go.mod pins (`make etcd` writes bin/etcd): the same binary etcd's releases
// ship, without a download. Debian's etcd-server is 3.4, which etcd no longer maintains.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
