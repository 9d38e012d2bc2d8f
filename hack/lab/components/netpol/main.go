// Command netpol enforces NetworkPolicy on one lab node with the kube-network-policies library:
// the first packet of each connection to or from a local pod that a policy selects goes to an
// NFQUEUE, where the library's controller accepts or drops it. It runs as a process in the
// node's network namespace, as kube-proxy does, with the lab's kubeconfig.
//
// The lab's kernel has no nftables queue expression (nft_queue), which the library's own rules
// use, so their sync fails (and is logged); this program steers instead, with iptables' NFQUEUE
// target (which the kernel has), in the mangle table's FORWARD chain NBLAB-NETPOL that
// lab.sh creates: after Service DNAT, before the zone delay line in POSTROUTING, and nothing
// else of that chain is skipped by the queue's verdict.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	node := flag.String("node", "", "name of the node this process enforces policies on")
	queue := flag.Int("nfqueue-id", 100, "NFQUEUE number (the lab's delay line uses 1 and 2)")
	ipv6 := flag.Bool("ipv6", false, "steer the pods' IPv6 connections too (ip6tables), on a lab with IPv6")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*kubeconfig, *node, *queue, *ipv6); err != nil {
		fmt.Fprintln(os.Stderr, "netpol:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string, queue int, ipv6 bool) error {
	if node == "" {
		return fmt.Errorf("--node is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			QueueID:  queue,
			NodeName: node,
			// The lab's kernel (6.12+) has the conntrack fix for parallel DNS queries. Its
			// containerd (1.6) has no NRI, so pod IPs come from the API server; NRI stays
			// enabled all the same: with it disabled, v0.8.0 dereferences its missing NRI
			// plugin on the first packet from an address that is no pod's (a nil-pointer panic).
			NetfilterBug1766Fix: false,
			NFTableName:         "netbench-lab-netpol",
		})
	if err != nil {
		return err
	}
	st := &steering{node: node, queue: queue, ipv6: ipv6, pods: factory.Core().V1().Pods().Lister(), policies: factory.Networking().V1().NetworkPolicies().Lister(), kick: make(chan struct{}, 1)}
	for _, inf := range []cache.SharedIndexInformer{factory.Core().V1().Pods().Informer(), factory.Networking().V1().NetworkPolicies().Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { st.changed() }, UpdateFunc: func(any, any) { st.changed() }, DeleteFunc: func(any) { st.changed() },
		}); err != nil {
			return err
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	factory.Start(ctx.Done())
	go st.loop(ctx)
	return <-done
}

// steering keeps the chain NBLAB-NETPOL queueing new connections of the local pods that a
// policy selects (as the library's nftables set would).
type steering struct {
	node     string
	queue    int
	ipv6     bool
	pods     corelisters.PodLister
	policies networkinglisters.NetworkPolicyLister
	kick     chan struct{}
	last     [2]string // the rules last written, IPv4 and IPv6
}

func (s *steering) changed() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *steering) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		if err := s.sync(); err != nil {
			klog.ErrorS(err, "steering new connections to the policy queue")
		}
	}
}

// sync writes the chain of each family when the set of its selected local pod IPs changed.
func (s *steering) sync() error {
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	var ips [2][]string // IPv4, IPv6
	for _, p := range pods {
		if p.Spec.NodeName != s.node || p.Spec.HostNetwork || !s.selected(p) {
			continue
		}
		for _, a := range p.Status.PodIPs {
			if ip, err := netip.ParseAddr(a.IP); err == nil {
				f := 0
				if !ip.Unmap().Is4() {
					f = 1
				}
				ips[f] = append(ips[f], ip.Unmap().String())
			}
		}
	}
	for f, restore := range []string{"iptables-restore", "ip6tables-restore"} {
		if f == 1 && !s.ipv6 {
			continue
		}
		if err := s.write(f, restore, ips[f]); err != nil {
			return err
		}
	}
	return nil
}

// write puts one family's rules in its chain with the restore command, unless they are unchanged.
func (s *steering) write(f int, restore string, ips []string) error {
	bits := []string{"32", "128"}[f]
	sort.Strings(ips)
	var b strings.Builder
	b.WriteString("*mangle\n:NBLAB-NETPOL - [0:0]\n")
	for _, ip := range ips {
		for _, dir := range []string{"-s", "-d"} {
			fmt.Fprintf(&b, "-A NBLAB-NETPOL %s %s/%s -m conntrack --ctstate NEW -j NFQUEUE --queue-num %d\n", dir, ip, bits, s.queue)
		}
	}
	b.WriteString("COMMIT\n")
	if b.String() == s.last[f] {
		return nil
	}
	cmd := exec.Command(restore, "--noflush")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", restore, err, out)
	}
	s.last[f] = b.String()
	klog.InfoS("steering", "family", []string{"IPv4", "IPv6"}[f], "pods", len(ips))
	return nil
}

// selected says whether any NetworkPolicy of the pod's namespace selects it.
func (s *steering) selected(p *corev1.Pod) bool {
	nps, err := s.policies.NetworkPolicies(p.Namespace).List(labels.Everything())
	if err != nil {
		return false
	}
	for _, np := range nps {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err == nil && sel.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}
