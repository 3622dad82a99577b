// Command summarize prints the per-SIG summary of a conformance JUnit report
// (`make conformance` runs it on _output/conformance/junit_01.xml).
package main

import (
	"fmt"
	"os"

	"github.com/minik8s/minik8s/test/conformance"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: summarize JUNIT.xml")
		os.Exit(2)
	}
	results, err := conformance.Read(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conformance.Write(os.Stdout, results)
}
