#!/usr/bin/env bash
# Starts a single-node minik8s on this host: containerd (when not already running), miniapi
# on the embedded store and minilet, then runs a demo pod and shows it. `make down` undoes it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/bin
export PATH=$PATH:$BIN # bin/kubectl (`make kubectl`) when the host has none
STATE=${MINIK8S_STATE:-/var/lib/minik8s/host}
RUN=/run/minik8s/up
LOGS=$STATE/logs
DATA=$STATE/miniapi
NODE=$(hostname -s | tr 'A-Z_' 'a-z-')
POD_CIDR=${POD_CIDR:-10.244.0.0/24}
CONTAINERD_SOCK=/run/containerd/containerd.sock
KUBECONFIG_ADMIN=$DATA/admin.kubeconfig
mkdir -p "$RUN" "$LOGS"

say() { printf '==> %s\n' "$*"; }
running() { [[ -f $RUN/$1.pid ]] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
start() { # name, command...
  local name=$1; shift
  if running "$name"; then say "$name already running (pid $(cat "$RUN/$name.pid"))"; return; fi
  setsid "$@" >>"$LOGS/$name.log" 2>&1 < /dev/null &
  echo $! >"$RUN/$name.pid"
  say "started $name (pid $!, log $LOGS/$name.log)"
}
wait_for() { # description, seconds, command...
  local what=$1 secs=$2; shift 2
  for ((i = 0; i < secs; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "timed out after ${secs}s waiting for $what; see the logs in $LOGS" >&2
  return 1
}

if ! ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1; then
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    say "starting containerd (systemd)"
    systemctl start containerd
  else
    start containerd containerd
  fi
  wait_for containerd 30 ctr --address "$CONTAINERD_SOCK" version
fi

# No registry here: load our images into minilet's containerd namespace (the pause image
# is embedded in minilet itself).
for img in netexec busybox coredns dnsutils; do
  say "importing localhost/minik8s/$img:v1"
  ctr --address "$CONTAINERD_SOCK" -n minilet images import "$PWD/images/out/$img.tar" >/dev/null
done

NODE_IP=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
# Pods (CoreDNS) reach the API at the node's address: it must be in the serving certificate.
start miniapi "$BIN/miniapi" --data-dir "$DATA" --bind-address 0.0.0.0 --secure-port 6443 \
  ${NODE_IP:+--tls-san "$NODE_IP"}
wait_for "miniapi" 30 test -s "$KUBECONFIG_ADMIN"
wait_for "miniapi to serve" 30 kubectl --kubeconfig "$KUBECONFIG_ADMIN" get --raw /readyz

"$BIN/miniapi" kubeconfig --data-dir "$DATA" --user "system:node:$NODE" --group system:nodes \
  --server https://127.0.0.1:6443 --out "$STATE/minilet.kubeconfig" >/dev/null
"$BIN/miniapi" serving-cert --data-dir "$DATA" --name minilet --host "${NODE_IP:-127.0.0.1}" --host "$NODE" \
  --out-dir "$STATE/minilet-pki" >/dev/null
# A development cluster on a shared disk watches no disk signal (as minikube's node): a host
# past 85% full would otherwise taint the node with disk-pressure and leave the demo Pending.
# The systemd units keep the kubelet's defaults.
start minilet "$BIN/minilet" --kubeconfig "$STATE/minilet.kubeconfig" --node-name "$NODE" \
  --node-ip "${NODE_IP:-127.0.0.1}" --pod-cidr "$POD_CIDR" --containerd "$CONTAINERD_SOCK" \
  --tls-cert-file "$STATE/minilet-pki/minilet.crt" --tls-private-key-file "$STATE/minilet-pki/minilet.key" \
  --client-ca-file "$STATE/minilet-pki/ca.crt" --cluster-dns 10.96.0.10 --cluster-domain cluster.local \
  --eviction-hard 'memory.available<100Mi,nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%,imagefs.inodesFree<0%'

"$BIN/miniapi" kubeconfig --data-dir "$DATA" --user system:kube-proxy \
  --server https://127.0.0.1:6443 --out "$STATE/miniproxy.kubeconfig" >/dev/null
start miniproxy "$BIN/miniproxy" --kubeconfig "$STATE/miniproxy.kubeconfig" --hostname-override "$NODE" \
  --cluster-cidr "${CLUSTER_CIDR:-10.244.0.0/16}"

k() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
say "waiting for node $NODE to be Ready"
wait_for "node $NODE to register" 60 k get node "$NODE"
k wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null

# Cluster DNS (deploy/addons/coredns.yaml, docs/dns.md). CoreDNS's credentials until
# ServiceAccount tokens exist: a client certificate for its ServiceAccount's user name.
say "deploying cluster DNS (CoreDNS at 10.96.0.10)"
"$BIN/miniapi" kubeconfig --data-dir "$DATA" --user system:serviceaccount:kube-system:coredns \
  --group system:serviceaccounts --group system:serviceaccounts:kube-system \
  --server "https://${NODE_IP:-127.0.0.1}:6443" --out "$STATE/coredns.kubeconfig" >/dev/null
k -n kube-system create secret generic coredns-kubeconfig --from-file=kubeconfig="$STATE/coredns.kubeconfig" \
  --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f deploy/addons/coredns.yaml >/dev/null
if ! k -n kube-system rollout status deployment/coredns --timeout=120s >/dev/null; then
  k -n kube-system get pods -o wide >&2
  echo "CoreDNS did not become ready; see $LOGS/minilet.log and: kubectl -n kube-system logs deployment/coredns" >&2
  exit 1
fi

# The default StorageClass (deploy/addons/storage.yaml, docs/storage.md): claims get
# directories under $STATE/storage, which `make down` removes.
say "adding the default StorageClass (node-local volumes under $STATE/storage)"
sed "s|@STORAGE_PATH@|$STATE/storage|" deploy/addons/storage.yaml | k apply -f - >/dev/null

say "running the demo pod"
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: demo
  labels: {app: demo}
spec:
  containers:
  - name: netexec
    image: localhost/minik8s/netexec:v1
    imagePullPolicy: IfNotPresent
YAML
if ! k wait --for=condition=Ready pod/demo --timeout=120s >/dev/null; then
  k get pods -o wide >&2
  echo "the demo pod did not become Ready; see $LOGS/minilet.log" >&2
  exit 1
fi
# A Service in front of it: the endpointslice controller finds the pod, miniproxy writes the rules.
k expose pod demo --port 80 --target-port 8080 >/dev/null 2>&1 || true
wait_for "the demo Service's endpoints" 30 bash -c \
  "kubectl --kubeconfig '$KUBECONFIG_ADMIN' get endpointslices -l kubernetes.io/service-name=demo -o jsonpath='{.items[*].endpoints[*].addresses[0]}' | grep -q ."
k get nodes,pods,services,endpointslices -A -o wide
cat <<MSG

minik8s is up. Look around with:
  kubectl --kubeconfig $KUBECONFIG_ADMIN get nodes,pods -A
Service names resolve in pods (docs/dns.md):
  kubectl --kubeconfig $KUBECONFIG_ADMIN run dnsutils --image localhost/minik8s/dnsutils:v1 --restart=Never -- sleep 3600
  kubectl --kubeconfig $KUBECONFIG_ADMIN exec dnsutils -- nslookup demo.default
Logs: $LOGS   Stop and remove everything: make down
MSG
