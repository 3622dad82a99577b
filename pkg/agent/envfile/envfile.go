// Package envfile reads one variable of an env file that a pod wrote into one of its
// volumes, for an env var's valueFrom.fileKeyRef (the kubelet's EnvFiles, beta and on by
// default since 1.35).
package envfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Lookup is key's value in the env file at path inside dir, "" when the file does not
// set it. path is opened through an os.Root of dir, so neither ".." nor a symlink the pod
// planted can make it read a file of the host.
func Lookup(dir, path, key string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer f.Close()
	return find(f, key)
}

// find reads the kubelet's env file format: KEY='value' lines (the value single-quoted,
// may span lines, a comment may follow it), blank lines and # comments; `KEY= 'v'`, with
// a space after '=', sets KEY empty, as in a shell.
func find(r io.Reader, key string) (string, error) {
	lines := bufio.NewScanner(r)
	n := 0
	for lines.Scan() {
		n++
		line := strings.TrimLeft(lines.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", n)
		case name == "":
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", n)
		case strings.TrimRight(name, " \t") != name:
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", n)
		case strings.TrimLeft(value, " \t") != value:
			if name == key {
				return "", nil
			}
			continue
		case !strings.HasPrefix(value, "'"):
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", n)
		}
		var b strings.Builder
		rest, start := value[1:], n
		for {
			if end := strings.IndexByte(rest, '\''); end >= 0 {
				b.WriteString(rest[:end])
				if after := strings.TrimLeft(rest[end+1:], " \t"); after != "" && after[0] != '#' {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", n)
				}
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			if !lines.Scan() {
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
			}
			n++
			rest = lines.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	return "", lines.Err()
}
