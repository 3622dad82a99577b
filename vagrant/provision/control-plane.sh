#!/usr/bin/env bash
# Provisions the control plane: miniapi, and minilet and miniproxy so that it is a node too
# (tainted NoSchedule, as kubeadm does); then what the workers need to join, in $JOIN_DIR:
# a bootstrap token with its bootstrap kubeconfig (the token is a kube-system Secret in
# kubeadm's format), node kubeconfigs for JOIN_METHOD=kubeconfig, miniproxy's kubeconfig
# and the workers' node API serving certificates. Settings: common.sh.
# Vagrant's shell provisioner uploads this script alone to /tmp/vagrant-shell and runs it
# there: common.sh is found in the repository ($SRC), not beside $0.
source "${SRC:-/vagrant}/vagrant/provision/common.sh"
# The workers, NAME=IP each (the Vagrantfile's).
WORKERS=${WORKERS:-"worker-1=192.168.56.11 worker-2=192.168.56.12"}
DATA=/var/lib/miniapi
ADMIN=$DATA/admin.kubeconfig
k() { kubectl --kubeconfig "$ADMIN" "$@"; }

install_packages
install_minik8s
import_images

say "starting miniapi"
# --advertise-address: the kubernetes Service's endpoint; left to itself miniapi would take
# the first address, on Vagrant's NAT interface (eth0: 10.0.2.15 in every VirtualBox VM).
write_env miniapi "--data-dir=$DATA --bind-address=0.0.0.0 --advertise-address=$NODE_IP --secure-port=6443 --tls-san=$NODE_IP --service-cluster-ip-range=$SERVICE_CIDR --cluster-cidr=$CLUSTER_CIDR --node-cidr-mask-size=24"
start_units miniapi
k get --raw /readyz >/dev/null || die "miniapi is active but /readyz does not answer"

# This node's credentials, issued by the cluster CA directly (the control plane has it).
mkdir -p "$CONFDIR/pki"
miniapi kubeconfig --data-dir "$DATA" --user "system:node:$NODE_NAME" --group system:nodes \
  --server "https://$NODE_IP:6443" --out "$CONFDIR/minilet.kubeconfig" >/dev/null
miniapi kubeconfig --data-dir "$DATA" --user system:kube-proxy \
  --server "https://$NODE_IP:6443" --out "$CONFDIR/miniproxy.kubeconfig" >/dev/null
miniapi serving-cert --data-dir "$DATA" --name minilet --host "$NODE_IP" --host "$NODE_NAME" \
  --out-dir "$CONFDIR/pki" >/dev/null
write_env minilet "--kubeconfig=$CONFDIR/minilet.kubeconfig --node-name=$NODE_NAME --node-ip=$NODE_IP --containerd=/run/containerd/containerd.sock --root-dir=/var/lib/minilet --cni-bin-dir=/usr/lib/cni --pod-network=host-gw --pod-manifest-path=$CONFDIR/manifests --tls-cert-file=$CONFDIR/pki/minilet.crt --tls-private-key-file=$CONFDIR/pki/minilet.key --client-ca-file=$CONFDIR/pki/ca.crt --cluster-dns=10.96.0.10"
write_env miniproxy "--kubeconfig=$CONFDIR/miniproxy.kubeconfig --hostname-override=$NODE_NAME --cluster-cidr=$CLUSTER_CIDR --proxy-mode=iptables --healthz-bind-address=0.0.0.0:10256 --metrics-bind-address=127.0.0.1:10249"
say "starting minilet and miniproxy"
start_units minilet miniproxy
wait_until "node $NODE_NAME to be Ready" k wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s
k label node "$NODE_NAME" node-role.kubernetes.io/control-plane= --overwrite >/dev/null
k taint node "$NODE_NAME" node-role.kubernetes.io/control-plane:NoSchedule --overwrite >/dev/null

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
  kubectl config --kubeconfig "$file" set-cluster minik8s --server "https://$CONTROL_PLANE_IP:6443" \
    --certificate-authority "$JOIN_DIR/ca.crt" --embed-certs >/dev/null
  kubectl config --kubeconfig "$file" set-credentials "$user" "$@" >/dev/null
  kubectl config --kubeconfig "$file" set-context default --cluster minik8s --user "$user" >/dev/null
  kubectl config --kubeconfig "$file" use-context default >/dev/null
}
kubeconfig "$JOIN_DIR/bootstrap.kubeconfig" tls-bootstrap-token-user --token "$token_id.$token_secret"

# For JOIN_METHOD=kubeconfig: each worker's node credentials, issued here. And for every
# worker: miniproxy's credentials and a serving certificate for its node API.
miniapi kubeconfig --data-dir "$DATA" --user system:kube-proxy \
  --server "https://$CONTROL_PLANE_IP:6443" --out "$JOIN_DIR/miniproxy.kubeconfig" >/dev/null
for w in $WORKERS; do
  name=${w%%=*} ip=${w#*=}
  miniapi kubeconfig --data-dir "$DATA" --user "system:node:$name" --group system:nodes \
    --server "https://$CONTROL_PLANE_IP:6443" --out "$JOIN_DIR/$name.kubeconfig" >/dev/null
  miniapi serving-cert --data-dir "$DATA" --name minilet --host "$ip" --host "$name" \
    --out-dir "$JOIN_DIR/$name-pki" >/dev/null
done
date -u +%FT%TZ >"$JOIN_DIR/ready"
say "control plane ready; workers join with what is in $JOIN_DIR (JOIN_METHOD=$JOIN_METHOD)"
