package path

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// addWayInFlags adds the flags of path here DST: the way in and the node entered by.
func (o *PathOptions) addWayInFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Via, "via", "", "SRC here: enter the cluster from this machine through a temporary Service in front of DST's agent: nodeport (a node's port) or loadbalancer (the Service's load balancer)")
	f.StringVar(&o.ExternalTrafficPolicy, "external-traffic-policy", o.ExternalTrafficPolicy, "SRC here: the temporary Service's externalTrafficPolicy, Cluster (any node forwards, with SNAT) or Local (only DST's node; the source kept)")
	f.StringVar(&o.EntryNode, "entry-node", "", "SRC here --via nodeport: the node whose port is entered (default: DST's own node; another node with Cluster shows the extra hop)")
	_ = cmd.RegisterFlagCompletionFunc("via", cmdutil.FixedCompletion(ViaNodePort, ViaLoadBalancer))
	_ = cmd.RegisterFlagCompletionFunc("external-traffic-policy", cmdutil.FixedCompletion(string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)))
}

// validateWayIn checks SRC here's flags, and refuses them for any other SRC.
func (o *PathOptions) validateWayIn() error {
	policySet := o.ExternalTrafficPolicy != string(corev1.ServiceExternalTrafficPolicyCluster)
	if !IsHere(o.SrcArg) {
		if o.Via != "" || o.EntryNode != "" || policySet {
			return fmt.Errorf("--via, --entry-node and --external-traffic-policy are for SRC here (this machine, entering the cluster from outside), not SRC %s", o.SrcArg)
		}
		return nil
	}
	switch {
	case o.Via != ViaNodePort && o.Via != ViaLoadBalancer:
		return fmt.Errorf("--via %q: SRC here enters the cluster from this machine: want --via nodeport or --via loadbalancer", o.Via)
	case IsExternal(o.DstArg) || IsOutsideAgent(o.DstArg):
		return fmt.Errorf("DST %s: SRC here enters the cluster: DST is a workload in it (a pod, TYPE/NAME or svc/NAME)", o.DstArg)
	case o.ExternalTrafficPolicy != string(corev1.ServiceExternalTrafficPolicyCluster) && o.ExternalTrafficPolicy != string(corev1.ServiceExternalTrafficPolicyLocal):
		return fmt.Errorf("--external-traffic-policy %q: want Cluster or Local", o.ExternalTrafficPolicy)
	case o.EntryNode != "" && o.Via != ViaNodePort:
		return fmt.Errorf("--entry-node: only with --via nodeport (a load balancer chooses the node)")
	case o.SrcContainer != "" || o.AllowHostNetwork:
		return fmt.Errorf("--src-container and --allow-host-network are for a SRC in the cluster, not here (this machine)")
	case o.Mode == session.ModePod:
		return fmt.Errorf("--mode pod: SRC here measures the way into DST's own pod, whose agent is an ephemeral container (--mode ephemeral or auto)")
	case o.AllowPolicy:
		return fmt.Errorf("--allow-policy: not with SRC here (what admits this machine into DST's pod is the cluster's to say)")
	case o.Port != 0 || o.HTTPPath != "/":
		return fmt.Errorf("--port and --http-path: not with SRC here, which measures DST's agent through a temporary Service")
	case o.IPFamily == FamilyBoth:
		return fmt.Errorf("--ip-family both: SRC here enters by one family at a time (4 or 6; run it once for each)")
	case slices.Contains(o.Probes, "loaded-rtt"):
		return fmt.Errorf("--probes loaded-rtt: not with SRC here, whose ICMP samples would end at the address entered, not at the pod (udp and tcp-rtt measure the way in)")
	case runtime.GOOS != "linux":
		return fmt.Errorf("SRC here: the client runs in this process and its probes need Linux (this is %s): run the plugin from a Linux machine outside the cluster", runtime.GOOS)
	}
	return nil
}
