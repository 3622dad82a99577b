#!/usr/bin/env bash
# Smoke check of a provisioned cluster, run on the control plane as root
# (vagrant ssh control-plane -c 'sudo /vagrant/vagrant/provision/smoke.sh'):
#   1. EXPECT_NODES nodes (default 3) registered and Ready;
#   2. a Deployment with one netexec pod per schedulable node (required pod anti-affinity on
#      the host name), all Running, on distinct nodes;
#   3. its ClusterIP Service answers from this host, through miniproxy's rules and the
#      pod network, and every pod answers at least once.
# Leaves nothing behind (the Deployment and Service are deleted). Exit status 0 = all passed.
set -euo pipefail
EXPECT_NODES=${EXPECT_NODES:-3}
WAIT_SECONDS=${WAIT_SECONDS:-300}
KUBECONFIG=${KUBECONFIG:-/var/lib/miniapi/admin.kubeconfig}
export KUBECONFIG
NS=default NAME=smoke
say() { printf '==> [smoke] %s\n' "$*"; }
fail() { printf 'smoke: FAIL: %s\n' "$*" >&2; kubectl get nodes,pods -o wide >&2 || true; exit 1; }
cleanup() { kubectl -n $NS delete deployment/$NAME service/$NAME --ignore-not-found --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

nodes=$(kubectl get nodes -o name | wc -l)
((nodes == EXPECT_NODES)) || fail "$nodes nodes registered, want $EXPECT_NODES"
kubectl wait --for=condition=Ready node --all --timeout="${WAIT_SECONDS}s" >/dev/null || fail "not every node is Ready"
say "$nodes nodes Ready"

# Schedulable: no NoSchedule taint (the control plane has one).
replicas=$(kubectl get nodes -o go-template='{{range .items}}{{$ok := true}}{{range .spec.taints}}{{if eq .effect "NoSchedule"}}{{$ok = false}}{{end}}{{end}}{{if $ok}}x{{end}}{{end}}' | wc -c)
((replicas > 0)) || fail "no schedulable node"
kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $NAME, namespace: $NS}
spec:
  replicas: $replicas
  selector: {matchLabels: {app: $NAME}}
  template:
    metadata: {labels: {app: $NAME}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: $NAME}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: netexec
        image: localhost/minik8s/netexec:v1
        imagePullPolicy: IfNotPresent
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: $NAME, namespace: $NS}
spec:
  selector: {app: $NAME}
  ports: [{port: 80, targetPort: 8080}]
YAML
kubectl -n $NS rollout status deployment/$NAME --timeout="${WAIT_SECONDS}s" >/dev/null || fail "deployment $NAME did not roll out"
placed=$(kubectl -n $NS get pods -l app=$NAME -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
((placed == replicas)) || fail "$replicas pods on $placed distinct nodes"
say "$replicas pods Running on $placed nodes"

ip=$(kubectl -n $NS get service $NAME -o jsonpath='{.spec.clusterIP}')
pods=$(kubectl -n $NS get pods -l app=$NAME -o jsonpath='{.items[*].metadata.name}')
# GET /hostname through the ClusterIP (bash's /dev/tcp: no curl needed) until every pod answered.
get() { timeout 5 bash -c "exec 3<>/dev/tcp/$ip/80 && printf 'GET /hostname HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3"; }
seen=""
for ((i = 0; i < 60; i++)); do
  if answer=$(get 2>/dev/null) && [[ -n $answer ]]; then
    [[ " $seen " == *" $answer "* ]] || seen="$seen $answer"
  fi
  missing=0
  for p in $pods; do [[ " $seen " == *" $p "* ]] || missing=1; done
  ((missing == 0)) && break
  sleep 1
done
((missing == 0)) || fail "Service $NAME ($ip:80) answered as [${seen# }], want every pod of [$pods]"
say "Service $NAME ($ip:80) reached every pod:$seen"
say "PASS"
