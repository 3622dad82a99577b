#!/usr/bin/env bash
# hack/kube-router-build.sh: builds kube-router (github.com/cloudnativelabs/kube-router/v2,
# the baseline of bench/policybench) from the Go module proxy in a throw-away wrapper module
# and caches it by version (~/.cache/minik8s/kube-router-VERSION/kube-router), so
# `make bench-policy` reuses one build. Prints the binary's path.
# KUBE_ROUTER_VERSION picks the release (default v2.1.0, the newest v2 the proxy serves).
set -euo pipefail

version=${KUBE_ROUTER_VERSION:-v2.1.0}
mod=github.com/cloudnativelabs/kube-router/v2
cache=${MINIK8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minik8s}
out="$cache/kube-router-$version/kube-router"
if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init minik8s.local/kube-router-build-wrapper >/dev/null 2>&1
go mod edit -require="$mod@$version"
printf '//go:build tools\n\npackage tools\n\nimport _ "%s/cmd/kube-router"\n' "$mod" > tools.go
start=$(date +%s)
echo "kube-router-build: building kube-router $version" >&2
go build -o kube-router -ldflags "-X $mod/pkg/version.Version=$version" "$mod/cmd/kube-router"
mkdir -p "$(dirname "$out")"
mv kube-router "$out.tmp" && mv "$out.tmp" "$out"
echo "kube-router-build: built $out in $(( $(date +%s) - start ))s" >&2
echo "$out"
