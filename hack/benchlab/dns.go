package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The DNS capacity section: the lab's CPU-limited CoreDNS (dnsManifest) in the benchmark's
// namespace, and a glibc resolver pod on dnsNode whose only nameserver is its Service; `dns
// --load` ramps the Service from that pod, and dnsperf, in the same pod's network namespace, is
// ramped by the same search (probes.NextLoadRate) at the same step length and timeout, each
// step judged by the report's criteria on dnsperf's own figures.
const (
	dnsManifest = "hack/lab/manifests/dns-capacity.yaml"
	dnsService  = "capacity-dns"
	dnsNode     = "lab-a1"
	dnsName     = "kubernetes.default"
	// dnsBudget is the plugin's --load-duration: under two of the ramp's minimum shares (30 s),
	// so that it ramps the Service (the nameserver, first) alone and lists the replicas.
	dnsBudget = "45s"
)

var dnsSection = pathSpec{"DNS capacity: the lab's CPU-limited CoreDNS (" + dnsManifest + "), from a glibc pod on " + dnsNode, "dns-app", dnsNode}

// dnsApp is the resolver pod; NAMESERVER is the Service's ClusterIP.
const dnsApp = `apiVersion: v1
kind: Pod
metadata: {name: dns-app, namespace: netbench-benchlab}
spec:
  nodeName: NODE
  dnsPolicy: None
  dnsConfig: {nameservers: [NAMESERVER], searches: [netbench-benchlab.svc.cluster.local, svc.cluster.local, cluster.local], options: [{name: ndots, value: "5"}]}
  containers: [{name: app, image: "netbench.lab/resolver-glibc:1", args: ["--idle"], securityContext: SC}]
`

var dnsRows = []rowSpec{
	{"dns knee", "dns --load, the Service's sustained queries/s (the knee)", fmt.Sprintf("dnsperf, %d sockets, ramped by the same search", reftools.DNSPerfSockets), benchinfo.WithinPct(10)},
}

// measureDNS deploys the limited CoreDNS and the resolver pod, then alternates the two ramps.
func measureDNS(c config, l *lab) (pathResult, error) {
	res := pathResult{spec: dnsSection, figures: map[string]*figure{}}
	ip, err := l.dnsSetup()
	if err != nil {
		return res, err
	}
	limit, err := l.k("-n", namespace, "get", "deploy", dnsService, "-o", "jsonpath={.spec.template.spec.containers[0].resources.limits.cpu}")
	if err != nil {
		return res, err
	}
	res.detail = "Its replicas' CPU limit, as deployed: " + strings.TrimSpace(string(limit))
	in, err := nsRunner(dnsNode, l.ips[dnsSection.client])
	if err != nil {
		return res, err
	}
	mixFile := filepath.Join(os.TempDir(), fmt.Sprintf("netbench-benchlab-mix-%d", os.Getpid()))
	defer os.Remove(mixFile)
	var load *v1alpha1.DNSLoad
	for round := 0; round < c.rounds; round++ {
		fmt.Fprintf(os.Stderr, "%s: round %d/%d\n", dnsSection.name, round+1, c.rounds)
		var ours, ref float64
		ourTurn := func() (err error) {
			if load, err = runDNSLoad(c); err == nil {
				ours = load.Servers[0].SustainedQPS
			}
			return err
		}
		refTurn := func() (err error) {
			if err := reftools.WriteDNSMix(mixFile, load.Mix); err != nil {
				return err
			}
			ref, err = reftools.DNSPerfKnee(in, ip, mixFile, load)
			return err
		}
		if err := inTurn(round, ourTurn, refTurn); err != nil {
			return res, err
		}
		res.add("dns knee", ours, ref)
	}
	return res, nil
}

// dnsSetup applies the limited CoreDNS and starts the resolver pod once it is ready; it returns
// the Service's ClusterIP.
func (l *lab) dnsSetup() (string, error) {
	if _, err := l.k("apply", "-n", namespace, "-f", dnsManifest); err != nil {
		return "", err
	}
	if _, err := l.k("-n", namespace, "rollout", "status", "deploy/"+dnsService, "--timeout=180s"); err != nil {
		return "", err
	}
	out, err := l.k("-n", namespace, "get", "service", dnsService, "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		return "", err
	}
	ip := strings.TrimSpace(string(out))
	cmd := exec.Command(l.kubectl, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.NewReplacer("SC", restricted, "NODE", dnsNode, "NAMESERVER", ip).Replace(dnsApp))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("kubectl apply: %w: %s", err, out)
	}
	if _, err := l.k("-n", namespace, "wait", "--for=condition=Ready", "pod/"+dnsSection.client, "--timeout=120s"); err != nil {
		return "", err
	}
	out, err = l.k("-n", namespace, "get", "pod", dnsSection.client, "-o", "jsonpath={.status.podIP}")
	if err != nil {
		return "", err
	}
	l.ips[dnsSection.client] = strings.TrimSpace(string(out))
	return ip, nil
}

// dnsArgs is the plugin's command line for the capacity ramp of the Service alone.
func dnsArgs(client string) []string {
	return []string{"dns", "-n", namespace, client, dnsName, "--load", "--dns-service", namespace + "/" + dnsService, "--load-duration", dnsBudget, "-o", "json"}
}

// runDNSLoad runs the plugin's ramp and reads the Service's knee.
func runDNSLoad(c config) (*v1alpha1.DNSLoad, error) {
	r, err := runReport[v1alpha1.DNSReport](c, dnsArgs(dnsSection.client))
	if err != nil {
		return nil, err
	}
	if r.Result == nil || r.Result.Load == nil || len(r.Result.Load.Servers) == 0 || len(r.Result.Load.Mix) == 0 {
		return nil, errors.New("the plugin's report has no capacity ramp")
	}
	if s := r.Result.Load.Servers[0]; !s.Nameserver || s.Limit != v1alpha1.LoadLimitDegraded {
		return nil, fmt.Errorf("the ramp of the Service ended by %q, not at a knee: %+v", s.Limit, s.Steps)
	}
	return r.Result.Load, nil
}
