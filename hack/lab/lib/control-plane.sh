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
# NODATA for their other types, the outside host's name (A, and AAAA with IPv6), and
# NXDOMAIN for every other name.
start_upstream_dns() {
  mkdir -p "$STATE/upstream"
  upstream_corefile > "$STATE/upstream/Corefile"
  start upstream-dns - "$BIN/coredns" -conf "$STATE/upstream/Corefile"
}

upstream_corefile() {
  local re="" aaaa
  for name in $UPSTREAM_NAMES; do re="$re${re:+|}${name//./\\.}"; done
  aaaa='authority "{{ .Zone }} 60 IN SOA ns.lab. hostmaster.lab. 1 60 60 60 60"' # NODATA
  if has_ipv6; then aaaa="answer \"{{ .Name }} 60 IN AAAA $OUTSIDE_IP6\""; fi
  render Corefile HOST_IP="$HOST_IP" NAMES_RE="$re" UPSTREAM_ADDR="$UPSTREAM_ADDR" \
    OUTSIDE_NAME="$OUTSIDE_NAME" OUTSIDE_RE="${OUTSIDE_NAME//./\\.}" OUTSIDE_IP="$OUTSIDE_IP" OUTSIDE_AAAA="$aaaa"
}

# refresh_upstream_dns: a running upstream DNS whose Corefile this tree renders differently
# reloads it (SIGUSR1: CoreDNS keeps its sockets, no query is lost); one not running starts.
refresh_upstream_dns() {
  local f=$STATE/upstream/Corefile new
  new=$(upstream_corefile)
  if ! running upstream-dns; then start_upstream_dns; return; fi
  [ "$new" = "$(cat "$f" 2>/dev/null)" ] && return 0
  printf '%s\n' "$new" > "$f"
  kill -USR1 "$(cat "$(pidfile upstream-dns)")"
  log "the upstream DNS reloads its Corefile"
}
