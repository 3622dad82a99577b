// Command kubectl is the upstream kubectl, built from the published k8s.io/kubectl module
// exactly as kubernetes/cmd/kubectl wraps it. The Makefile builds it into bin/kubectl only
// on hosts that have no kubectl, so a fresh host needs nothing preinstalled.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
