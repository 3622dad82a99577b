package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// busybox is the shell sh hands over to; bash when ash would drop a variable.
const (
	busybox = "/bin/busybox"
	bash    = "/bin/bash"
)

// overridden are the busybox applets this image replaces by programs of its own.
var overridden = []string{"nc", "wget", "nslookup"}

// sh runs busybox ash with the same arguments; a command string (-c) gets a prelude of
// functions that call the image's own nc, wget and nslookup instead of the applets. When
// the environment holds a variable whose name is no shell identifier (`data-1` of a
// ConfigMap's envFrom), it runs bash as sh instead: upstream busybox 1.37's ash passes
// such variables on to its commands, Debian's drops them (it reverts busybox commit
// 9c143ce52), bash keeps them. Otherwise ash, whose messages the suite expects
// ("/bin/sh: can't create /file: Read-only file system").
// Either runs under the name sh was called by (/bin/sh), which busybox reads as its ash
// applet and both shells put before their messages, as upstream's /bin/sh does.
func sh(args []string) int {
	path, argv := busybox, append([]string{os.Args[0]}, withPrelude(args, prelude("/usr/bin", "/bin"))...)
	if dropsVariables(os.Environ()) {
		path, argv = bash, append([]string{os.Args[0]}, args...)
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintln(os.Stderr, "sh:", err)
	return 127
}

// dropsVariables reports whether Debian's ash would drop one of env's variables: a name
// that is not a shell identifier (letters, digits and _, not starting with a digit).
func dropsVariables(env []string) bool {
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for i, c := range name {
			if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
				return true
			}
		}
	}
	return false
}

// prelude defines a function for each overridden applet found in one of dirs as a
// program that is not busybox's.
func prelude(dirs ...string) string {
	var b strings.Builder
	for _, name := range overridden {
		for _, dir := range dirs {
			p := dir + "/" + name
			if target, err := os.Readlink(p); err == nil && filepath.Base(target) == "busybox" {
				continue
			}
			if _, err := os.Stat(p); err == nil {
				fmt.Fprintf(&b, "%s() { %s/%s \"$@\"; }; ", name, dir, name)
				break
			}
		}
	}
	return b.String()
}

// withPrelude puts prelude before the command string of sh's arguments: the first
// operand after the options when one of them has c (sh -c CMD, sh -xc CMD, sh -e -c CMD).
func withPrelude(args []string, prelude string) []string {
	if prelude == "" {
		return args
	}
	out := append([]string(nil), args...)
	command := false
	for i, a := range out {
		switch {
		case a == "--":
			if command && i+1 < len(out) {
				out[i+1] = prelude + "\n" + out[i+1]
			}
			return out
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			if a[0] == '-' && strings.ContainsRune(a[1:], 'c') && !strings.HasPrefix(a, "--") {
				command = true
			}
			if a == "-o" || a == "+o" { // -o OPTION takes the next argument
				continue
			}
		default:
			if i > 0 && (out[i-1] == "-o" || out[i-1] == "+o") {
				continue
			}
			if command {
				out[i] = prelude + "\n" + a
			}
			return out
		}
	}
	return out
}
