# shellcheck shell=bash
# Sourced by hack/lab/lab.sh; uses its settings.
# The lab's CA, the API server's, admin's and the outside host's certificates, the admin kubeconfig.

gen_certs() {
  local d=$STATE/pki
  [ -f "$d/admin.crt" ] && return 0
  mkdir -p "$d"
  log "generating certificates"
  (
    cd "$d" || exit 1
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -key ca.key -subj "/CN=netbench-lab-ca" -days 3650 -out ca.crt 2>/dev/null
    render apiserver.cnf HOST_IP="$HOST_IP" > apiserver-ext.cnf
    openssl genrsa -out apiserver.key 2048 2>/dev/null
    openssl req -new -key apiserver.key -subj "/CN=kube-apiserver" -out apiserver.csr 2>/dev/null
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver-ext.cnf -extensions ext -out apiserver.crt 2>/dev/null
    printf '[ext]\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = clientAuth\n' > client.cnf
    openssl genrsa -out admin.key 2048 2>/dev/null
    openssl req -new -key admin.key -subj "/O=system:masters/CN=netbench-lab-admin" -out admin.csr 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.cnf -extensions ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  render admin.kubeconfig HOST_IP="$(primary_of "$HOST_IP" "[$HOST_IP6]")" PKI="$d" > "$KUBECONFIG_PATH"
}

# gen_server_cert NAME DNS-NAME: a TLS server certificate for DNS-NAME alone (no IP SAN), issued
# by the lab's CA, as $STATE/pki/NAME.crt and NAME.key; kept once made. Clients verify it with
# the CA, $STATE/pki/ca.crt (lab.sh ca prints the path).
gen_server_cert() {
  local d=$STATE/pki name=$1 dns=$2
  [ -f "$d/$name.crt" ] && return 0
  [ -f "$d/ca.key" ] || die "no lab CA in $d"
  (
    cd "$d" || exit 1
    printf '[ext]\nbasicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\nextendedKeyUsage = serverAuth\nsubjectAltName = DNS:%s\n' "$dns" > "$name.cnf"
    openssl genrsa -out "$name.key" 2048 2>/dev/null
    openssl req -new -key "$name.key" -subj "/CN=$dns" -out "$name.csr" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile "$name.cnf" -extensions ext -out "$name.crt.new" 2>/dev/null
    mv "$name.crt.new" "$name.crt"
  )
}
