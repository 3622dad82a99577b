// Command nettools is the curl, nc and sh of the conformance suite's agnhost image
// (images/e2eimages.go), one binary that acts as the program its name says. Upstream's
// agnhost image (Alpine) has curl and a full nc, which the suite's networking tests run
// inside agnhost pods (`curl -g -q -s 'http://IP:8083/dial?...'`, `echo hostName | nc -v -u
// -w 2 IP PORT`); Debian's busybox-static has no curl and a nc without -u, -v or -t, and
// its ash runs its own applets before any program on PATH, so /bin/sh is ours too: busybox
// ash with our tools defined as functions, which ash looks up before its applets (or bash
// when ash would drop a variable, sh.go says why). The suite's busybox image has this sh too.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	tools := map[string]func([]string) int{"curl": curl, "dig": dig, "getent": getent, "nc": nc, "sh": sh}
	name := filepath.Base(os.Args[0])
	tool, ok := tools[name]
	if !ok && len(os.Args) > 1 { // nettools curl ...
		name = os.Args[1]
		tool, ok = tools[name]
		os.Args = os.Args[1:]
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "nettools: run as curl, dig, getent, nc or sh")
		os.Exit(2)
	}
	os.Exit(tool(os.Args[1:]))
}
