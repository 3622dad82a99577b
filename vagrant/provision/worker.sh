#!/usr/bin/env bash
# Provisions a worker: minilet and miniproxy, joining the cluster with what the control plane
# left in $JOIN_DIR (it provisions first). JOIN_METHOD (common.sh) says how minilet gets its
# credentials: a bootstrap token (minilet --bootstrap-kubeconfig, requesting its own client
# certificate into --cert-dir, as kubelet does) or a node kubeconfig issued by the control plane.
# With an HA control plane (CONTROL_PLANE_MEMBERS) those kubeconfigs name 127.0.0.1: this
# node's balancer (apilb.service, common.sh), started before minilet and miniproxy.
# Vagrant's shell provisioner uploads this script alone to /tmp/vagrant-shell and runs it
# there: common.sh is found in the repository ($SRC), not beside $0.
source "${SRC:-/vagrant}/vagrant/provision/common.sh"

install_packages
install_minik8s
import_images

wait_until "the control plane's join files in $JOIN_DIR" test -f "$JOIN_DIR/ready"
method=$(join_method)
mkdir -p "$CONFDIR/pki"
install -m 0600 "$JOIN_DIR/miniproxy.kubeconfig" "$CONFDIR/miniproxy.kubeconfig"
install -m 0644 "$JOIN_DIR/$NODE_NAME-pki/minilet.crt" "$JOIN_DIR/$NODE_NAME-pki/ca.crt" "$CONFDIR/pki/"
install -m 0600 "$JOIN_DIR/$NODE_NAME-pki/minilet.key" "$CONFDIR/pki/"
case $method in
  bootstrap)
    # minilet writes $CONFDIR/minilet.kubeconfig itself once its certificate is issued.
    install -m 0600 "$JOIN_DIR/bootstrap.kubeconfig" "$CONFDIR/bootstrap.kubeconfig"
    creds="--bootstrap-kubeconfig=$CONFDIR/bootstrap.kubeconfig --kubeconfig=$CONFDIR/minilet.kubeconfig --cert-dir=/var/lib/minilet/pki"
    ;;
  kubeconfig)
    [[ -f $JOIN_DIR/$NODE_NAME.kubeconfig ]] || die "no $JOIN_DIR/$NODE_NAME.kubeconfig: is $NODE_NAME in the control plane's WORKERS?"
    install -m 0600 "$JOIN_DIR/$NODE_NAME.kubeconfig" "$CONFDIR/minilet.kubeconfig"
    creds="--kubeconfig=$CONFDIR/minilet.kubeconfig"
    ;;
esac
start_apilb
say "joining with JOIN_METHOD=$method"
write_env minilet "$creds --node-name=$NODE_NAME --node-ip=$NODE_IP --containerd=/run/containerd/containerd.sock --root-dir=/var/lib/minilet --cni-bin-dir=/usr/lib/cni --pod-network=host-gw --pod-manifest-path=$CONFDIR/manifests --tls-cert-file=$CONFDIR/pki/minilet.crt --tls-private-key-file=$CONFDIR/pki/minilet.key --client-ca-file=$CONFDIR/pki/ca.crt --cluster-dns=10.96.0.10"
write_env miniproxy "--kubeconfig=$CONFDIR/miniproxy.kubeconfig --hostname-override=$NODE_NAME --cluster-cidr=$CLUSTER_CIDR --proxy-mode=iptables --healthz-bind-address=0.0.0.0:10256 --metrics-bind-address=127.0.0.1:10249"
start_units minilet miniproxy
say "worker joined"
