#!/usr/bin/env bash
# Installs, from Debian/Ubuntu packages, what minik8s and its tests need. Idempotent and
# quiet when everything is present.
set -euo pipefail

PACKAGES=(
  containerd runc containernetworking-plugins # pods: runtime, OCI runtime, CNI plugins
  iptables ipset conntrack iproute2            # networking and service proxy
  busybox-static                               # copied into the images we build
  util-linux                                   # nsenter, for daemons inside lab namespaces
  e2fsprogs                                    # chattr, for the store's permission test as root
  etcd-server                                  # the etcd store engine's tests
  docker-registry                              # image pull tests: a registry on loopback
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go 1.26 is required on PATH (see go.mod); it was not found" >&2
  exit 1
fi
