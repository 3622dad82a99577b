#!/usr/bin/env bash
# Stops what `make up` started and removes its pods, state and network pieces.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:$PWD/bin # bin/kubectl (`make kubectl`) when the host has none
STATE=${MINIK8S_STATE:-/var/lib/minik8s/host}
RUN=/run/minik8s/up
KUBECONFIG_ADMIN=$STATE/miniapi/admin.kubeconfig
say() { printf '==> %s\n' "$*"; }

stop() {
  local pidfile=$RUN/$1.pid
  [[ -f $pidfile ]] || return 0
  local pid; pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    say "stopping $1 (pid $pid)"
    kill -TERM "$pid"
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# Let minilet stop the pods the normal way while it is still running.
if [[ -s $KUBECONFIG_ADMIN ]] && kubectl --kubeconfig "$KUBECONFIG_ADMIN" get --raw /readyz >/dev/null 2>&1; then
  say "deleting all pods"
  kubectl --kubeconfig "$KUBECONFIG_ADMIN" delete pods --all -A --timeout=60s >/dev/null 2>&1 || true
fi
stop miniproxy
[[ -x bin/miniproxy ]] && bin/miniproxy --cleanup >/dev/null 2>&1 || true
stop minilet
stop miniapi
# Whatever minilet left behind (it was killed, or crashed): containers, netns, bridge.
if command -v ctr >/dev/null && ctr version >/dev/null 2>&1; then
  for c in $(ctr -n minilet containers ls -q 2>/dev/null); do
    ctr -n minilet tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true
    ctr -n minilet tasks rm -f "$c" >/dev/null 2>&1 || true
    ctr -n minilet containers rm "$c" >/dev/null 2>&1 || true
  done
fi
stop containerd
if [[ -d /var/lib/minilet/netns ]]; then
  for ns in /var/lib/minilet/netns/*; do
    [[ -e $ns ]] || continue
    umount "$ns" 2>/dev/null || true
    rm -f "$ns"
  done
  umount /var/lib/minilet/netns 2>/dev/null || true # minilet makes the dir a shared mount
fi
# The volumes of pods still running when minilet stopped (a Deployment's replacements of
# the pods deleted above): minilet unmounts a pod's volumes only when the pod goes.
awk '$2 ~ "^/var/lib/minilet/pods/" {print $2}' /proc/self/mounts | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" || true
done
ip link del cni0 2>/dev/null || true
"$PWD/bin/minilet" network --cleanup 2>/dev/null || true # routes, VXLAN device, egress rules
rm -rf "$STATE" /var/lib/minilet "$RUN"
say "minik8s is down"
