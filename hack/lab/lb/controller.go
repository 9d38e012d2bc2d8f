package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// excludeLabel keeps a node out of every load balancer, as cloud providers read it.
const excludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// routes sets the router's route of each address (router; a fake in tests).
type routes interface {
	set(a netip.Addr, hops []netip.Addr) error
	del(a netip.Addr) error
	flush(p netip.Prefix) error
}

type controller struct {
	client kubernetes.Interface
	router routes
	pools  []netip.Prefix
	// applied is each address's nexthops as last set at the router.
	applied map[netip.Addr]string
	// failed counts each Local Service's node's health checks failed in a row (by UID and
	// node address): a node leaves the route after failedLimit, as a cloud's unhealthy
	// threshold has it, not on one slow answer.
	failed map[string]int
}

const failedLimit = 2

// healthClient asks a node's kube-proxy whether it has a local endpoint of a Service.
var healthClient = &http.Client{Timeout: 500 * time.Millisecond}

// reconcile gives every Service its addresses and sets the router's route of each address.
func (c *controller) reconcile(ctx context.Context) error {
	svcs, err := c.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var ours []*corev1.Service
	for i := range svcs.Items {
		if s := &svcs.Items[i]; s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.LoadBalancerClass == nil && c.poolOnly(s) {
			ours = append(ours, s)
		}
	}
	// The oldest Service keeps an address two hold.
	slices.SortStableFunc(ours, func(a, b *corev1.Service) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	claims := c.claims(ours)
	want := map[netip.Addr][]netip.Addr{}
	for _, s := range ours {
		addrs := c.assign(s, claims)
		if err := c.publish(ctx, s, addrs); err != nil {
			log.Printf("lb: %v", err)
		}
		for _, a := range addrs {
			want[a] = c.nexthops(ctx, s, nodes.Items, a.Is4())
		}
	}
	c.apply(want)
	return nil
}

// claims maps each pool address a Service's status already holds to that Service (the first
// in svcs to hold it, when two do).
func (c *controller) claims(svcs []*corev1.Service) map[netip.Addr]types.UID {
	claims := map[netip.Addr]types.UID{}
	for _, s := range svcs {
		for _, in := range s.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(in.IP); err == nil && c.inPool(a) && claims[a] == "" {
				claims[a] = s.UID
			}
		}
	}
	return claims
}

// poolOnly says whether every address s's status holds is of a pool: a Service another
// controller gave an address is left alone.
func (c *controller) poolOnly(s *corev1.Service) bool {
	for _, in := range s.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err != nil || !c.inPool(a) {
			return false
		}
	}
	return true
}

func (c *controller) inPool(a netip.Addr) bool {
	return slices.ContainsFunc(c.pools, func(p netip.Prefix) bool { return p.Contains(a) })
}

// assign is s's address in each of its families that has a pool: the one its status holds,
// else the pool's first free one (claimed for it).
func (c *controller) assign(s *corev1.Service, claims map[netip.Addr]types.UID) []netip.Addr {
	families := s.Spec.IPFamilies
	if len(families) == 0 {
		families = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	var addrs []netip.Addr
	for _, f := range families {
		for _, p := range c.pools {
			if p.Addr().Is4() != (f == corev1.IPv4Protocol) {
				continue
			}
			if a, ok := held(claims, s.UID, p); ok {
				addrs = append(addrs, a)
			} else if a, ok := free(claims, p); ok {
				claims[a] = s.UID
				addrs = append(addrs, a)
			} else {
				log.Printf("lb: %s/%s: pool %s is full", s.Namespace, s.Name, p)
			}
		}
	}
	return addrs
}

// held is the address of pool p claimed by uid.
func held(claims map[netip.Addr]types.UID, uid types.UID, p netip.Prefix) (netip.Addr, bool) {
	for a, u := range claims {
		if u == uid && p.Contains(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// free is p's first address after its network address that nobody claims.
func free(claims map[netip.Addr]types.UID, p netip.Prefix) (netip.Addr, bool) {
	for a := p.Addr().Next(); p.Contains(a); a = a.Next() {
		if claims[a] == "" {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// publish writes addrs into s's status unless it holds them already.
func (c *controller) publish(ctx context.Context, s *corev1.Service, addrs []netip.Addr) error {
	vip := corev1.LoadBalancerIPModeVIP
	var ingress []corev1.LoadBalancerIngress
	for _, a := range addrs {
		ingress = append(ingress, corev1.LoadBalancerIngress{IP: a.String(), IPMode: &vip})
	}
	same := slices.EqualFunc(ingress, s.Status.LoadBalancer.Ingress, func(a, b corev1.LoadBalancerIngress) bool { return a.IP == b.IP })
	if same {
		return nil
	}
	s = s.DeepCopy()
	s.Status.LoadBalancer.Ingress = ingress
	if _, err := c.client.CoreV1().Services(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s/%s: writing its address: %w", s.Namespace, s.Name, err)
	}
	log.Printf("lb: %s/%s: %v", s.Namespace, s.Name, addrs)
	return nil
}

// nexthops are the nodes s's address goes to, by their address of the family: every Ready node
// not excluded from load balancers, and with externalTrafficPolicy Local only those whose
// health check node port answers 200 (up to failedLimit-1 failures in a row forgiven).
func (c *controller) nexthops(ctx context.Context, s *corev1.Service, nodes []corev1.Node, v4 bool) []netip.Addr {
	var hops []netip.Addr
	for i := range nodes {
		n := &nodes[i]
		a, ok := internalIP(n, v4)
		if _, excluded := n.Labels[excludeLabel]; !ok || excluded || !ready(n) {
			continue
		}
		if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && !c.healthy(ctx, s, a) {
			continue
		}
		hops = append(hops, a)
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops
}

func internalIP(n *corev1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); a.Type == corev1.NodeInternalIP && err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// healthy says whether node a has passed s's health check, or failed fewer than failedLimit
// in a row since it last passed (a node never seen to pass is not healthy).
func (c *controller) healthy(ctx context.Context, s *corev1.Service, a netip.Addr) bool {
	key := string(s.UID) + "/" + a.String()
	n, seen := c.failed[key]
	if check(ctx, a, s.Spec.HealthCheckNodePort) {
		c.failed[key] = 0
		return true
	}
	if !seen {
		return false
	}
	c.failed[key] = n + 1
	return n+1 < failedLimit
}

// check asks kube-proxy on node a whether it has a local endpoint of the Service whose health
// check node port is port (200: yes).
func check(ctx context.Context, a netip.Addr, port int32) bool {
	if port == 0 {
		return false
	}
	u := "http://" + net.JoinHostPort(a.String(), strconv.Itoa(int(port))) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := healthClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// apply sets each wanted address's route where it changed and takes away the others.
func (c *controller) apply(want map[netip.Addr][]netip.Addr) {
	for a, hops := range want {
		key := fmt.Sprint(hops)
		if c.applied[a] == key {
			continue
		}
		if err := c.router.set(a, hops); err != nil {
			log.Printf("lb: %v", err)
			continue
		}
		c.applied[a] = key
		log.Printf("lb: %s to %v", a, hops)
	}
	for a := range c.applied {
		if _, ok := want[a]; ok {
			continue
		}
		if err := c.router.del(a); err != nil {
			log.Printf("lb: %v", err)
			continue
		}
		delete(c.applied, a)
		log.Printf("lb: %s released", a)
	}
}
