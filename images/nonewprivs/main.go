// Command nonewprivs stands in for the e2e suite's image e2e-test-images/nonewprivs
// (its /usr/local/bin/nnp): installed setuid root, it prints the effective uid it runs
// with, so a pod running as uid 1000 shows whether the kernel let it become root
// (allowPrivilegeEscalation unset or true) or kept it at 1000 (false: no_new_privs).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("Effective uid: %d\n", os.Geteuid())
}
