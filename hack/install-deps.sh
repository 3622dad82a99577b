#!/usr/bin/env bash
# Installs, from Debian/Ubuntu packages, what minik8s and its tests need. Idempotent and
# quiet when everything is present.
set -euo pipefail

PACKAGES=(
  containerd runc containernetworking-plugins # pods: runtime, OCI runtime, CNI plugins
  iptables ipset conntrack iproute2            # networking and service proxy
  busybox-static                               # copied into the images we build
  bash-static                                  # /bin/sh of our images (images/images.go busyboxFiles says why)
  util-linux                                   # nsenter, for daemons inside lab namespaces
  jq                                           # docs/labs guides (and their tests) read JSON with it
  e2fsprogs                                    # chattr, for the store's permission test as root
  docker-registry                              # image pull tests: a registry on loopback
  qemu-system-x86                              # VM tests (internal/vmtest): IPVS mode on Debian's kernel
  ipvsadm                                      # docs/labs/clusterip-walk-ipvs.md (its test runs it in the VM)
  debootstrap                                  # the systemd VM test's Debian root (internal/vmtest.RootImage; built once, cached)
  systemd                                      # systemd-analyze verify of the units in systemd/
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

# Debian's kernel for the VM tests (internal/vmtest), unpacked into a cache directory: downloaded
# with `apt-get download` and extracted with `dpkg-deb -x`, never installed as this host's
# kernel. MINIK8S_VM_KERNEL points the tests elsewhere.
VMKERNEL_CACHE=/var/cache/minik8s/vmkernel
if ! ls "$VMKERNEL_CACHE"/root/boot/vmlinuz-* >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: Debian's kernel for the VM tests is missing in $VMKERNEL_CACHE; run as root to fetch it" >&2
    exit 1
  fi
  # linux-image-amd64 is a metapackage: the kernel is the linux-image-*-amd64 it depends on.
  image=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  if [[ -z $image ]]; then
    apt-get update -qq
    image=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  fi
  [[ -n $image ]] || { echo "install-deps: cannot resolve linux-image-amd64 to a kernel package" >&2; exit 1; }
  echo "install-deps: fetching $image for the VM tests into $VMKERNEL_CACHE"
  mkdir -p "$VMKERNEL_CACHE" && rm -rf "$VMKERNEL_CACHE/root.tmp"
  (cd "$VMKERNEL_CACHE" && apt-get download -qq -o APT::Sandbox::User=root "$image" && dpkg-deb -x "$image"_*.deb root.tmp && rm -f "$image"_*.deb)
  mv "$VMKERNEL_CACHE/root.tmp" "$VMKERNEL_CACHE/root"
fi

if ! command -v go >/dev/null 2>&1; then
  echo "install-deps: Go 1.26 is required on PATH (see go.mod); it was not found" >&2
  exit 1
fi
