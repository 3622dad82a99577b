#!/usr/bin/env bash
# hack/kube-build.sh e2e.test|kube-apiserver|kube-scheduler|kube-controller-manager|ginkgo:
# builds a Kubernetes binary from the published module k8s.io/kubernetes in a throw-away
# wrapper module and caches it by version (~/.cache/minik8s/e2e-VERSION/e2e.test,
# kube-apiserver-VERSION/kube-apiserver, ...), so `make conformance`, `make bench-ha` and
# `make bench-mem` reuse one build. Prints the binary's path. ginkgo is the Ginkgo CLI at the
# version k8s.io/kubernetes requires: it runs e2e.test in parallel.
# KUBE_VERSION picks the release (default v1.36.3, the one our baselines use).
#
# k8s.io/kubernetes requires its staging modules as v0.0.0 with replace directives to
# ./staging/...; replaces in a dependency are ignored, so the wrapper replaces each
# staging module by its published release (v1.X.Y -> v0.X.Y).
set -euo pipefail

what=${1:-}
case "$what" in
e2e.test) pkg=k8s.io/kubernetes/test/e2e dir=e2e ;;
kube-apiserver | kube-scheduler | kube-controller-manager) pkg=k8s.io/kubernetes/cmd/$what dir=$what ;;
ginkgo) pkg=github.com/onsi/ginkgo/v2/ginkgo dir=ginkgo ;;
*) echo "usage: hack/kube-build.sh e2e.test|kube-apiserver|kube-scheduler|kube-controller-manager|ginkgo (got '${what}')" >&2; exit 2 ;;
esac
version=${KUBE_VERSION:-v1.36.3}
cache=${MINIK8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minik8s}
out="$cache/$dir-$version/$what"
if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

staging=v0.${version#v1.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export GOFLAGS=-mod=mod GOWORK=off
go mod init minik8s.local/kube-build-wrapper >/dev/null 2>&1
modfile=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[[ -f "$modfile" ]] || { echo "kube-build: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }
go mod edit -require="k8s.io/kubernetes@$version"
for m in $(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$modfile"); do
	go mod edit -replace="$m=$m@$staging"
done
printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" > tools.go
start=$(date +%s)
echo "kube-build: building $what $version (cold build, 10-20 min on 2 cores)" >&2
if [[ $what == e2e.test ]]; then
	go test -c -o "$what" "$pkg"
elif [[ $what == ginkgo ]]; then
	go build -o "$what" "$pkg"
else
	minor=${version#v1.}
	minor=${minor%%.*}
	v=k8s.io/component-base/version
	go build -o "$what" -ldflags "-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" "$pkg"
fi
mkdir -p "$(dirname "$out")"
mv "$what" "$out.tmp" && mv "$out.tmp" "$out"
echo "kube-build: built $out in $(( $(date +%s) - start ))s" >&2
echo "$out"
