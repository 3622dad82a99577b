#!/usr/bin/env bash
# Provisions the control plane: miniapi, and minilet and miniproxy so that it is a node too
# (tainted NoSchedule, as kubeadm does); then what the workers need to join, in $JOIN_DIR:
# a bootstrap token with its bootstrap kubeconfig (the token is a kube-system Secret in
# kubeadm's format), node kubeconfigs for JOIN_METHOD=kubeconfig, miniproxy's kubeconfig
# and the workers' node API serving certificates. Settings: common.sh.
# With CONTROL_PLANE_MEMBERS (the Vagrantfile's CONTROL_PLANES=N > 1), each control plane also
# runs an etcd member (etcd.service, TLS from the cluster CA) and its miniapi stores in it;
# the first member starts the etcd cluster and the CA, the next ones copy the CA and join.
# Then every node, this one included, reaches the API through its own balancer
# (apilb.service on 127.0.0.1, common.sh): the kubeconfigs made here name it.
# Vagrant's shell provisioner uploads this script alone to /tmp/vagrant-shell and runs it
# there: common.sh is found in the repository ($SRC), not beside $0.
source "${SRC:-/vagrant}/vagrant/provision/common.sh"
# The workers, NAME=IP each (the Vagrantfile's).
WORKERS=${WORKERS:-"worker-1=192.168.56.11 worker-2=192.168.56.12"}
DATA=/var/lib/miniapi
ADMIN=$DATA/admin.kubeconfig
ETCD_PKI=$CONFDIR/etcd-pki
# The first control plane leaves the cluster CA and the token signing key here for the others.
SHARED_PKI=$JOIN_DIR/control-plane-pki
k() { kubectl --kubeconfig "$ADMIN" "$@"; }
etcdctl_() { etcdctl --cacert "$ETCD_PKI/ca.crt" --cert "$ETCD_PKI/apiserver-etcd-client.crt" --key "$ETCD_PKI/apiserver-etcd-client.key" "$@"; }
first_member() { [[ -z $CONTROL_PLANE_MEMBERS || ${CONTROL_PLANE_MEMBERS%%=*} == "$NODE_NAME" ]]; }

# start_etcd: this host's etcd member. The first starts a cluster of itself; each next one is
# added (etcdctl member add, through the members provisioned before it) and starts with
# --initial-cluster-state=existing, as kubeadm joins a control plane. Once the member has
# data, its flags are kept: etcd rejoins with what it stored.
start_etcd() {
  local peer=https://$NODE_IP:2380 client=https://$NODE_IP:2379 cluster state=new before="" m out
  [[ " $CONTROL_PLANE_MEMBERS " == *" $NODE_NAME=$NODE_IP "* ]] || die "$NODE_NAME=$NODE_IP is not in CONTROL_PLANE_MEMBERS ($CONTROL_PLANE_MEMBERS)"
  if ! first_member; then
    # One CA and one token signing key for the whole control plane: each miniapi trusts what
    # another issued.
    wait_until "the first control plane's $SHARED_PKI/ready" test -f "$SHARED_PKI/ready"
    install -d -m 0700 "$DATA/pki"
    install -m 0600 "$SHARED_PKI/ca.crt" "$SHARED_PKI/ca.key" "$SHARED_PKI/sa.key" "$DATA/pki/"
  fi
  miniapi etcd-certs --data-dir "$DATA" --name "$NODE_NAME" --host "$NODE_IP" --out-dir "$ETCD_PKI" >/dev/null
  if [[ ! -d /var/lib/etcd/member ]]; then
    cluster="$NODE_NAME=$peer"
    if ! first_member; then
      for m in $CONTROL_PLANE_MEMBERS; do
        [[ ${m%%=*} == "$NODE_NAME" ]] && break
        before="$before${before:+,}https://${m#*=}:2379"
      done
      say "adding etcd member $NODE_NAME through $before"
      # Not retried: an add that timed out may have been made (a busy first member took more
      # than etcdctl's default 5 s), hence a long wait for the answer.
      out=$(etcdctl_ --endpoints "$before" --command-timeout=5m member add "$NODE_NAME" --peer-urls "$peer") || die "etcdctl member add: $out"
      cluster=$(sed -n 's/^ETCD_INITIAL_CLUSTER="\(.*\)"$/\1/p' <<<"$out") state=existing
    fi
    # Heartbeat and election timeout 5 times etcd's defaults (100 ms, 1 s): on starved VMs
    # (emulated, on a loaded host) the members lost their leader every few seconds.
    write_env etcd "--name=$NODE_NAME --data-dir=/var/lib/etcd --heartbeat-interval=500 --election-timeout=5000 --listen-client-urls=$client,https://127.0.0.1:2379 --advertise-client-urls=$client --listen-peer-urls=$peer --initial-advertise-peer-urls=$peer --initial-cluster=$cluster --initial-cluster-state=$state --initial-cluster-token=minik8s --client-cert-auth --trusted-ca-file=$ETCD_PKI/ca.crt --cert-file=$ETCD_PKI/$NODE_NAME.crt --key-file=$ETCD_PKI/$NODE_NAME.key --peer-client-cert-auth --peer-trusted-ca-file=$ETCD_PKI/ca.crt --peer-cert-file=$ETCD_PKI/$NODE_NAME.crt --peer-key-file=$ETCD_PKI/$NODE_NAME.key"
  fi
  say "starting etcd (member $NODE_NAME)"
  start_units etcd
}

install_packages
install_minik8s
import_images

store=""
if [[ -n $CONTROL_PLANE_MEMBERS ]]; then
  first_member && rm -f "$SHARED_PKI/ready"
  start_etcd
  # The local member, as kubeadm's stacked etcd: this miniapi lives and dies with its host.
  store="--store=etcd://127.0.0.1:2379 --etcd-cafile=$ETCD_PKI/ca.crt --etcd-certfile=$ETCD_PKI/apiserver-etcd-client.crt --etcd-keyfile=$ETCD_PKI/apiserver-etcd-client.key"
fi
say "starting miniapi"
# --advertise-address: the kubernetes Service's endpoint; left to itself miniapi would take
# the first address, on Vagrant's NAT interface (eth0: 10.0.2.15 in every VirtualBox VM).
write_env miniapi "--data-dir=$DATA --bind-address=0.0.0.0 --advertise-address=$NODE_IP --secure-port=6443 --tls-san=$NODE_IP --service-cluster-ip-range=$SERVICE_CIDR --cluster-cidr=$CLUSTER_CIDR --node-cidr-mask-size=24${store:+ $store}"
start_units miniapi
k get --raw /readyz >/dev/null || die "miniapi is active but /readyz does not answer"
if [[ -n $CONTROL_PLANE_MEMBERS ]] && first_member; then
  # For the next control planes, which join from here on (sa.key: made by miniapi's first start).
  install -d -m 0700 "$SHARED_PKI"
  install -m 0600 "$DATA/pki/ca.crt" "$DATA/pki/ca.key" "$DATA/pki/sa.key" "$SHARED_PKI/"
  date -u +%FT%TZ >"$SHARED_PKI/ready"
fi

# This node's credentials, issued by the cluster CA directly (the control plane has it).
mkdir -p "$CONFDIR/pki"
# With an HA control plane, through this node's balancer (its miniapi may be the one lost).
local_api=https://$NODE_IP:6443
[[ -z $CONTROL_PLANE_MEMBERS ]] || local_api=$(api_server)
miniapi kubeconfig --data-dir "$DATA" --user "system:node:$NODE_NAME" --group system:nodes \
  --server "$local_api" --out "$CONFDIR/minilet.kubeconfig" >/dev/null
miniapi kubeconfig --data-dir "$DATA" --user system:kube-proxy \
  --server "$local_api" --out "$CONFDIR/miniproxy.kubeconfig" >/dev/null
miniapi serving-cert --data-dir "$DATA" --name minilet --host "$NODE_IP" --host "$NODE_NAME" \
  --out-dir "$CONFDIR/pki" >/dev/null
start_apilb
write_env minilet "--kubeconfig=$CONFDIR/minilet.kubeconfig --node-name=$NODE_NAME --node-ip=$NODE_IP --containerd=/run/containerd/containerd.sock --root-dir=/var/lib/minilet --cni-bin-dir=/usr/lib/cni --pod-network=host-gw --pod-manifest-path=$CONFDIR/manifests --tls-cert-file=$CONFDIR/pki/minilet.crt --tls-private-key-file=$CONFDIR/pki/minilet.key --client-ca-file=$CONFDIR/pki/ca.crt --cluster-dns=10.96.0.10"
write_env miniproxy "--kubeconfig=$CONFDIR/miniproxy.kubeconfig --hostname-override=$NODE_NAME --cluster-cidr=$CLUSTER_CIDR --proxy-mode=iptables --healthz-bind-address=0.0.0.0:10256 --metrics-bind-address=127.0.0.1:10249"
say "starting minilet and miniproxy"
start_units minilet miniproxy
wait_until "node $NODE_NAME to be Ready" k wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
k label node "$NODE_NAME" node-role.kubernetes.io/control-plane= --overwrite >/dev/null
k taint node "$NODE_NAME" node-role.kubernetes.io/control-plane:NoSchedule --overwrite >/dev/null

if ! first_member; then
  say "control plane $NODE_NAME joined (etcd member and miniapi)"
  exit 0
fi

# --- what the workers need ---
mkdir -p "$JOIN_DIR"
rm -f "$JOIN_DIR/ready"
k config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$JOIN_DIR/ca.crt"

# A bootstrap token as kubeadm makes it (bootstrap-token-<id>, type bootstrap.kubernetes.io/token,
# [a-z0-9]{6}.[a-z0-9]{16}), valid 24 hours, kept across re-provisioning while its Secret exists.
token_id=""
if [[ -s $JOIN_DIR/token ]]; then
  IFS=. read -r token_id token_secret <"$JOIN_DIR/token"
  k -n kube-system get secret "bootstrap-token-$token_id" >/dev/null 2>&1 || token_id=""
fi
if [[ -z $token_id ]]; then
  rand() { local s; s=$(head -c 512 /dev/urandom | LC_ALL=C tr -dc 'a-z0-9'); echo "${s:0:$1}"; }
  token_id=$(rand 6) token_secret=$(rand 16)
  k -n kube-system create secret generic "bootstrap-token-$token_id" --type=bootstrap.kubernetes.io/token \
    --from-literal=token-id="$token_id" --from-literal=token-secret="$token_secret" \
    --from-literal=usage-bootstrap-authentication=true --from-literal=usage-bootstrap-signing=true \
    --from-literal=auth-extra-groups=system:bootstrappers:kubeadm:default-node-token \
    --from-literal=expiration="$(date -u -d '+24 hours' +%Y-%m-%dT%H:%M:%SZ)" \
    --from-literal=description="minik8s vagrant: workers join with it" >/dev/null
  (umask 077 && echo "$token_id.$token_secret" >"$JOIN_DIR/token")
  say "bootstrap token $token_id created"
fi
# What kubeadm init binds for its tokens' group: nodes may create CSRs, their client CSRs are
# approved, and nodes may renew their own certificates.
bind() { k create clusterrolebinding "$1" --clusterrole="$2" --group="$3" --dry-run=client -o yaml | k apply -f - >/dev/null; }
bind kubeadm:kubelet-bootstrap system:node-bootstrapper system:bootstrappers:kubeadm:default-node-token
bind kubeadm:node-autoapprove-bootstrap system:certificates.k8s.io:certificatesigningrequests:nodeclient system:bootstrappers:kubeadm:default-node-token
bind kubeadm:node-autoapprove-certificate-rotation system:certificates.k8s.io:certificatesigningrequests:selfnodeclient system:nodes
kubeconfig() { # file user [credential flags...]
  local file=$1 user=$2; shift 2
  rm -f "$file"
  kubectl config --kubeconfig "$file" set-cluster minik8s --server "$(api_server)" \
    --certificate-authority "$JOIN_DIR/ca.crt" --embed-certs >/dev/null
  kubectl config --kubeconfig "$file" set-credentials "$user" "$@" >/dev/null
  kubectl config --kubeconfig "$file" set-context default --cluster minik8s --user "$user" >/dev/null
  kubectl config --kubeconfig "$file" use-context default >/dev/null
}
kubeconfig "$JOIN_DIR/bootstrap.kubeconfig" tls-bootstrap-token-user --token "$token_id.$token_secret"

# For JOIN_METHOD=kubeconfig: each worker's node credentials, issued here. And for every
# worker: miniproxy's credentials and a serving certificate for its node API.
miniapi kubeconfig --data-dir "$DATA" --user system:kube-proxy \
  --server "$(api_server)" --out "$JOIN_DIR/miniproxy.kubeconfig" >/dev/null
for w in $WORKERS; do
  name=${w%%=*} ip=${w#*=}
  miniapi kubeconfig --data-dir "$DATA" --user "system:node:$name" --group system:nodes \
    --server "$(api_server)" --out "$JOIN_DIR/$name.kubeconfig" >/dev/null
  miniapi serving-cert --data-dir "$DATA" --name minilet --host "$ip" --host "$name" \
    --out-dir "$JOIN_DIR/$name-pki" >/dev/null
done
date -u +%FT%TZ >"$JOIN_DIR/ready"
say "control plane ready; workers join with what is in $JOIN_DIR (JOIN_METHOD=$JOIN_METHOD)"
