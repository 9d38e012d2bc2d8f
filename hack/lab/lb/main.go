// Command lb is the lab's LoadBalancer: a controller that gives every Service of type
// LoadBalancer (no loadBalancerClass) an address of the lab's pool in each of its families,
// and a router (the lab's nblab-rt) that forwards each address to the nodes a cloud load
// balancer would: every Ready node for externalTrafficPolicy Cluster, and for Local only those
// whose kube-proxy health check (the Service's healthCheckNodePort) answers 200, as a cloud
// load balancer's health checks do. The router spreads connections over those nodes by their
// addresses and ports (fib_multipath_hash_policy 1); the nodes' kube-proxy does the rest.
//
//	lb -kubeconfig admin.kubeconfig -netns nblab-rt -pool4 10.77.64.0/24 -pool6 2001:db8:5300::/112
//
// It checks every second; an address with no node to go to is unreachable at the router.
// It is the lab's only: a real cluster's load balancers are its cloud's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the lab's admin kubeconfig")
	netns := flag.String("netns", "nblab-rt", "the router's network namespace")
	pool4 := flag.String("pool4", "", "the IPv4 pool, a prefix")
	pool6 := flag.String("pool6", "", "the IPv6 pool, a prefix (none: no IPv6 addresses)")
	every := flag.Duration("interval", time.Second, "how often the Services and the nodes' health are checked")
	flag.Parse()
	c, err := newController(*kubeconfig, *netns, *pool4, *pool6)
	if err != nil {
		log.Fatalf("lb: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.run(ctx, *every); err != nil {
		log.Fatalf("lb: %v", err)
	}
}

func newController(kubeconfig, netns, pool4, pool6 string) (*controller, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("-kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("-kubeconfig %s: %w", kubeconfig, err)
	}
	c := &controller{client: client, router: router{netns: netns}, applied: map[netip.Addr]string{}, failed: map[string]int{}}
	for flag, p := range map[string]string{"4": pool4, "6": pool6} {
		if p == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(p)
		if err != nil || pfx.Addr().Is4() != (flag == "4") {
			return nil, fmt.Errorf("-pool%s %s: want an IPv%s prefix", flag, p, flag)
		}
		c.pools = append(c.pools, pfx.Masked())
	}
	if len(c.pools) == 0 {
		return nil, errors.New("no pool: want -pool4 or -pool6")
	}
	return c, nil
}

// run reconciles every interval until ctx ends, then takes its routes away.
func (c *controller) run(ctx context.Context, every time.Duration) error {
	for _, p := range c.pools {
		if err := c.router.flush(p); err != nil {
			return err
		}
	}
	log.Printf("lb: serving pools %v", c.pools)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			log.Printf("lb: %v", err)
		}
		select {
		case <-ctx.Done():
			for _, p := range c.pools {
				_ = c.router.flush(p)
			}
			return nil
		case <-t.C:
		}
	}
}
