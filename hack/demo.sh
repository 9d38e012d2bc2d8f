#!/usr/bin/env bash
# The demo: sample workloads on the lab, then a `path`, two `dns` reports, a `ladder` with the
# zone delay on, and a `matrix` of every node pair with one node made slow.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBECONFIG=$(hack/lab/lab.sh kubeconfig)
export KUBECONFIG
K=.cache/lab/bin/kubectl
# A dev build: its default agent image is :dev, which the lab imports from this tree.
make -s bin/kubectl-netbench VERSION=dev
$K apply -f hack/lab/manifests/demo.yaml >/dev/null
$K apply -n demo -f hack/lab/manifests/zoned.yaml >/dev/null
for d in shop-client shop-api shop-web-alpine; do $K -n demo rollout status deploy/$d --timeout=120s >/dev/null; done
echo "== kubectl netbench path -n demo deploy/shop-client svc/shop-api --port 8080"
bin/kubectl-netbench path -n demo deploy/shop-client svc/shop-api --port 8080
echo
echo "== kubectl netbench dns -n demo deploy/shop-client"
bin/kubectl-netbench dns -n demo deploy/shop-client
echo
echo "== kubectl netbench dns -n demo deploy/shop-web-alpine example.com"
bin/kubectl-netbench dns -n demo deploy/shop-web-alpine example.com
echo
echo "== hack/lab/lab.sh delay 300us 2ms; kubectl netbench ladder -n demo deploy/shop-api --probes rtt,http"
hack/lab/lab.sh delay 300us 2ms
trap 'hack/lab/lab.sh slow-node lab-b1 off >/dev/null; hack/lab/lab.sh delay off' EXIT
bin/kubectl-netbench ladder -n demo deploy/shop-api --probes rtt,http
echo
echo "== hack/lab/lab.sh slow-node lab-b1 1ms; kubectl netbench matrix -n demo --scope nodes"
hack/lab/lab.sh slow-node lab-b1 1ms
bin/kubectl-netbench matrix -n demo --scope nodes
