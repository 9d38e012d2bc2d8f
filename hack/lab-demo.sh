# shellcheck shell=bash
# Sourced by the lab benchmarks (hack/bench-*.sh): the plugin built, the demo workloads applied
# and rolled out on the lab, KUBECONFIG exported and K the lab's kubectl. Run from the repo root.
KUBECONFIG=$(hack/lab/lab.sh kubeconfig)
export KUBECONFIG
K=.cache/lab/bin/kubectl
make -s bin/kubectl-netbench VERSION=dev
$K apply -f hack/lab/manifests/demo.yaml >/dev/null
$K -n demo rollout status deploy/shop-api deploy/shop-client --timeout=120s >/dev/null
