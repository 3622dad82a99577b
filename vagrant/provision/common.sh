# Shared by the provisioning scripts (sourced): settings, with the Vagrantfile's values as
# defaults, and the steps every node takes. Each script is idempotent: `vagrant provision`
# runs it again safely.
set -euo pipefail

SRC=${SRC:-/vagrant}                        # the repository, built on the host (make build)
BIN=${BIN:-$SRC/bin}                        # the binaries `make install` copies
IMAGES=${IMAGES:-$SRC/images/out}           # our images (netexec, busybox): no registry here
JOIN_DIR=${JOIN_DIR:-$SRC/vagrant/.join}    # written by the control plane, read by workers
CONTROL_PLANE_IP=${CONTROL_PLANE_IP:-192.168.56.10}
NODE_IP=${NODE_IP:?NODE_IP, the address of this node on the private network, is required}
NODE_NAME=${NODE_NAME:-$(hostname -s)}
# How workers get their credentials:
#   bootstrap  - a bootstrap token (a kube-system Secret in kubeadm's format) and
#                `minilet --bootstrap-kubeconfig`: minilet asks for its own certificate;
#   kubeconfig - a node kubeconfig the control plane issued, copied from $JOIN_DIR;
#   auto       - bootstrap when the installed minilet has --bootstrap-kubeconfig, else kubeconfig.
JOIN_METHOD=${JOIN_METHOD:-auto}
# The control planes of an HA control plane, NAME=IP each, the first first (the
# Vagrantfile's CONTROL_PLANES=N > 1); empty: one control plane, at CONTROL_PLANE_IP.
CONTROL_PLANE_MEMBERS=${CONTROL_PLANE_MEMBERS:-}
# With CONTROL_PLANE_MEMBERS, every node (control planes too) reaches the API through its
# own balancer on 127.0.0.1:APILB_PORT (apilb.service, kubespray's localhost load
# balancing), so its minilet and miniproxy outlive any one miniapi.
APILB_PORT=6444
CLUSTER_CIDR=${CLUSTER_CIDR:-10.244.0.0/16}
SERVICE_CIDR=${SERVICE_CIDR:-10.96.0.0/12}
WAIT_SECONDS=${WAIT_SECONDS:-600}           # bound of every wait

CONFDIR=/etc/minik8s
PACKAGES=(containerd runc containernetworking-plugins iptables ipset conntrack iproute2 kmod make)

say() { printf '==> %s [%s] %s\n' "$(date +%T)" "$NODE_NAME" "$*"; }
die() { printf 'provision [%s]: %s\n' "$NODE_NAME" "$*" >&2; exit 1; }

# wait_until DESCRIPTION COMMAND...: retries once a second, at most WAIT_SECONDS.
wait_until() {
  local what=$1 start=$SECONDS next=30; shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - start < WAIT_SECONDS)) || die "timed out after ${WAIT_SECONDS}s waiting for $what"
    ((SECONDS - start >= next)) && say "still waiting for $what ($((SECONDS - start))s)" && next=$((next + 30))
    sleep 1
  done
}

# Debian packages the daemons need, installed only when missing (an image that has them,
# such as the systemd VM test's, needs no network).
install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Our binaries, units and shipped configuration (make install), and kubectl.
install_minik8s() {
  [[ -x $BIN/minilet ]] || die "no $BIN/minilet: run make build on the host first"
  say "make install (binaries from $BIN)"
  make -s -C "$SRC" install BIN="$BIN" >/dev/null
  if ! command -v kubectl >/dev/null 2>&1; then
    [[ -x $BIN/kubectl ]] || die "no kubectl on PATH nor in $BIN: on the host, cd hack/kubectl && go build -o ../../bin/kubectl ."
    install -m 0755 "$BIN/kubectl" /usr/local/bin/kubectl
  fi
  modprobe br_netfilter
  keep_veth_macs
  systemctl daemon-reload
}

# make install put systemd/80-minik8s.link in place (udev keeps the kernel's MAC addresses
# of the pods' veths and the bridge, which minilet's check of a pod's network compares):
# udev reads it from now on.
keep_veth_macs() {
  udevadm control --reload 2>/dev/null || true
}

# containerd up, our images in minilet's namespace (the pause image is inside minilet).
import_images() {
  systemctl enable --now containerd >/dev/null 2>&1
  wait_until containerd ctr version
  for img in netexec busybox; do
    [[ -f $IMAGES/$img.tar ]] || die "no $IMAGES/$img.tar: run make build on the host first"
    ctr -n minilet images import "$IMAGES/$img.tar" >/dev/null
  done
  say "images imported: netexec, busybox"
}

# write_env DAEMON ARGS: the daemon's flags in /etc/minik8s/DAEMON.env.
write_env() {
  local var
  var=$(tr 'a-z' 'A-Z' <<<"$1")_ARGS
  printf '# Written by vagrant/provision (%s); flags: %s --help\n%s="%s"\n' "$(basename "$0")" "$1" "$var" "$2" \
    >"$CONFDIR/$1.env"
}

# start_units UNIT...: enable and (re)start them without blocking on Type=notify, then wait
# until each is active (READY=1 sent), showing the journal of one that is not.
start_units() {
  systemctl enable "$@" >/dev/null 2>&1
  systemctl restart --no-block "$@"
  for u in "$@"; do
    if ! wait_until_active "$u"; then
      journalctl -u "$u" --no-pager -n 30 >&2
      die "$u did not become active"
    fi
    say "$u is active"
  done
}

wait_until_active() {
  local start=$SECONDS next=30
  while ((SECONDS - start < WAIT_SECONDS)); do
    case $(systemctl is-active "$1") in
      active) return 0 ;;
      failed) return 1 ;;
    esac
    ((SECONDS - start >= next)) && say "still waiting for $1 to be active ($((SECONDS - start))s)" && next=$((next + 30))
    sleep 1
  done
  return 1
}

# join_method resolves JOIN_METHOD=auto against the installed minilet.
join_method() {
  case $JOIN_METHOD in
    bootstrap | kubeconfig) echo "$JOIN_METHOD" ;;
    auto) if /usr/local/bin/minilet --help 2>&1 | grep -q -- --bootstrap-kubeconfig; then echo bootstrap; else echo kubeconfig; fi ;;
    *) die "JOIN_METHOD=$JOIN_METHOD: want bootstrap, kubeconfig or auto" ;;
  esac
}

# api_server: the API address this cluster's kubeconfigs name: the node's own balancer
# with an HA control plane, else the control plane.
api_server() {
  if [[ -n $CONTROL_PLANE_MEMBERS ]]; then echo "https://127.0.0.1:$APILB_PORT"; else echo "https://$CONTROL_PLANE_IP:6443"; fi
}

# start_apilb: with an HA control plane, this node's balancer in front of every member's
# miniapi (checked with GET /readyz against the cluster CA, $CONFDIR/pki/ca.crt), started
# before minilet and miniproxy, whose kubeconfigs name it (api_server).
start_apilb() {
  local backends="" m
  [[ -n $CONTROL_PLANE_MEMBERS ]] || return 0
  for m in $CONTROL_PLANE_MEMBERS; do backends="$backends${backends:+,}${m#*=}:6443"; done
  write_env apilb "--listen=127.0.0.1:$APILB_PORT --backend=$backends --ca-file=$CONFDIR/pki/ca.crt"
  say "starting apilb (127.0.0.1:$APILB_PORT -> $backends)"
  start_units apilb
}
