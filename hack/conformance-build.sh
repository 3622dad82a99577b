#!/usr/bin/env bash
# Builds the Kubernetes conformance suite binary (e2e.test) from the published module
# k8s.io/kubernetes in a throw-away wrapper module and caches it by version, so that
# `make conformance` and the CI subset reuse one build. Prints the binary's path.
#
# k8s.io/kubernetes requires its staging modules as v0.0.0 with replace directives to
# ./staging/...; replaces in a dependency are ignored, so the wrapper replaces each
# staging module by its published release (v1.X.Y -> v0.X.Y).
set -euo pipefail

version=${CONFORMANCE_VERSION:-v1.36.3}
cache=${MINIK8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minik8s}
out="$cache/e2e-$version/e2e.test"
if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

staging=v0.${version#v1.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init minik8s.local/conformance-wrapper >/dev/null 2>&1
modfile=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[[ -f "$modfile" ]] || { echo "conformance-build: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }
go mod edit -require="k8s.io/kubernetes@$version"
for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
	go mod edit -replace="$m=$m@$staging"
done
cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/test/e2e"
GO
start=$(date +%s)
echo "conformance-build: building e2e.test $version (cold build, ~10 min on 2 cores)" >&2
go test -c -o e2e.test k8s.io/kubernetes/test/e2e
mkdir -p "$(dirname "$out")"
mv e2e.test "$out.tmp" && mv "$out.tmp" "$out"
echo "conformance-build: built $out in $(( $(date +%s) - start ))s" >&2
echo "$out"
