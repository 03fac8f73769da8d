// Command etcd is the upstream etcd server, built at the version that
// k8s.io/kubernetes's module graph selects (see ../go.mod).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
