# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# etcd, the API server, controller manager and scheduler, and the upstream DNS.

start_control_plane() {
  mkdir -p "$STATE/etcd"
  start etcd - etcd --name lab --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster lab=http://127.0.0.1:2380 --unsafe-no-fsync
  wait_for 30 etcd curl -sf http://127.0.0.1:2379/health

  # The API server's address is of the lab's primary family (its Service range's first).
  local p=$STATE/pki api
  api=$(primary_of "$HOST_IP" "$HOST_IP6")
  start kube-apiserver - "$BIN/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 \
    --bind-address="$api" --advertise-address="$api" --secure-port=6443 \
    --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
    --client-ca-file="$p/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
    --service-cluster-ip-range="$(by_family "$SERVICE_CIDR" "$SERVICE_CIDR6")" \
    --authorization-mode=RBAC --allow-privileged=true \
    --kubelet-client-certificate="$p/admin.crt" --kubelet-client-key="$p/admin.key" \
    --kubelet-preferred-address-types=InternalIP \
    --profiling=false --v=1
  wait_for 90 kube-apiserver kubectl get --raw /readyz

  start kube-controller-manager - "$BIN/kube-controller-manager" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false \
    --service-account-private-key-file="$p/sa.key" --root-ca-file="$p/ca.crt" \
    --use-service-account-credentials=true --cluster-cidr="$(by_family "$CLUSTER_CIDR" "$CLUSTER_CIDR6")" \
    --bind-address=127.0.0.1 --profiling=false --v=1
  start kube-scheduler - "$BIN/kube-scheduler" \
    --kubeconfig="$KUBECONFIG_PATH" --leader-elect=false --bind-address=127.0.0.1 --profiling=false --v=1
}

# The lab's upstream DNS, standing in for the Internet's: it answers A for UPSTREAM_NAMES,
# NODATA for their other types, and NXDOMAIN for every other name.
start_upstream_dns() {
  local d=$STATE/upstream re=""
  mkdir -p "$d"
  for name in $UPSTREAM_NAMES; do re="$re${re:+|}${name//./\\.}"; done
  render Corefile HOST_IP="$HOST_IP" NAMES_RE="$re" UPSTREAM_ADDR="$UPSTREAM_ADDR" > "$d/Corefile"
  start upstream-dns - "$BIN/coredns" -conf "$d/Corefile"
}
