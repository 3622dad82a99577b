#!/usr/bin/env bash
# Builds kube-apiserver from the published module k8s.io/kubernetes in a throw-away
# wrapper module and caches it by version, for the HA API benchmark (bench/habench)
# that runs it beside miniapi. Prints the binary's path. Nothing of the build is kept
# but the cached binary.
#
# Same approach as hack/conformance-build.sh: k8s.io/kubernetes requires its staging
# modules as v0.0.0 with replace directives to ./staging/...; replaces in a dependency
# are ignored, so the wrapper replaces each staging module by its published release
# (v1.X.Y -> v0.X.Y).
set -euo pipefail

version=${KUBE_APISERVER_VERSION:-v1.36.3}
cache=${MINIK8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minik8s}
out="$cache/kube-apiserver-$version/kube-apiserver"
if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

staging=v0.${version#v1.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init minik8s.local/kube-apiserver-wrapper >/dev/null 2>&1
modfile=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[[ -f "$modfile" ]] || { echo "kube-apiserver-build: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }
go mod edit -require="k8s.io/kubernetes@$version"
for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
	go mod edit -replace="$m=$m@$staging"
done
cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
start=$(date +%s)
echo "kube-apiserver-build: building kube-apiserver $version (cold build, 10-20 min on 2 cores)" >&2
minor=${version#v1.}
minor=${minor%%.*}
pkg=k8s.io/component-base/version
go build -o kube-apiserver -ldflags "-X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
	k8s.io/kubernetes/cmd/kube-apiserver
mkdir -p "$(dirname "$out")"
mv kube-apiserver "$out.tmp" && mv "$out.tmp" "$out"
echo "kube-apiserver-build: built $out in $(( $(date +%s) - start ))s" >&2
echo "$out"
