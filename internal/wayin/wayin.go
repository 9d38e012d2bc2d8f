// Package wayin holds what the ways into the cluster from outside share: a temporary
// LoadBalancer copy of a Service that is reached as the original is, its addresses, and the
// address a node is entered by.
package wayin

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// annotations are the annotations a LoadBalancer copy takes from the original, exactly these
// keys: the ones that choose a load balancer's kind, its scheme (internal or internet-facing),
// its subnets, its families and the sources it admits, so that the copy is reached as the
// original is and by no more sources. Any other annotation is left out, and one of a load
// balancer (loadBalancerAnnotation) makes the Service refused (CopyableLoadBalancer): it may
// name, reuse or rewire the original's load balancer, pin its address, point a DNS name at the
// copy, change the protocol the agents speak — or hold the security groups, firewall rules or
// access lists without which the copy would be more open than the original.
var annotations = map[string]bool{
	"service.beta.kubernetes.io/aws-load-balancer-type":                              true,
	"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type":                   true,
	"service.beta.kubernetes.io/aws-load-balancer-scheme":                            true,
	"service.beta.kubernetes.io/aws-load-balancer-internal":                          true,
	"service.beta.kubernetes.io/aws-load-balancer-subnets":                           true,
	"service.beta.kubernetes.io/aws-load-balancer-ip-address-type":                   true,
	"service.beta.kubernetes.io/azure-load-balancer-internal":                        true,
	"service.beta.kubernetes.io/azure-load-balancer-internal-subnet":                 true,
	"service.beta.kubernetes.io/azure-allowed-ip-ranges":                             true,
	"service.beta.kubernetes.io/azure-allowed-service-tags":                          true,
	"cloud.google.com/load-balancer-type":                                            true,
	"networking.gke.io/load-balancer-type":                                           true,
	"networking.gke.io/internal-load-balancer-subnet":                                true,
	"service.beta.kubernetes.io/oci-load-balancer-internal":                          true,
	"service.beta.kubernetes.io/openstack-internal-load-balancer":                    true,
	"service.beta.kubernetes.io/load-balancer-source-ranges":                         true,
	"metallb.universe.tf/address-pool":                                               true,
	"metallb.io/address-pool":                                                        true,
	"service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled": true,
}

// LoadBalancerCopy makes the LoadBalancer copy temp a load balancer of orig's kind: its
// loadBalancerClass, its loadBalancerSourceRanges and the annotations of annotations. It
// returns the keys of orig's other annotations that may configure a load balancer
// (loadBalancerAnnotation), left out.
func LoadBalancerCopy(temp, orig *corev1.Service) (left []string) {
	temp.Spec.LoadBalancerClass = orig.Spec.LoadBalancerClass
	temp.Spec.LoadBalancerSourceRanges = orig.Spec.LoadBalancerSourceRanges
	for k, v := range orig.Annotations {
		if !annotations[k] {
			if loadBalancerAnnotation(k) {
				left = append(left, k)
			}
			continue
		}
		if temp.Annotations == nil {
			temp.Annotations = map[string]string{}
		}
		temp.Annotations[k] = v
	}
	slices.Sort(left)
	return left
}

// providers are the annotation prefixes of load balancer controllers and clouds whose keys
// configure a Service's load balancer, whatever their names say (Huawei's kubernetes.io/elb.*,
// OCI's network security groups, …).
var providers = []string{
	"service.beta.kubernetes.io/", "kubernetes.io/elb.", "networking.gke.io/", "cloud.google.com/",
	"oci.oraclecloud.com/", "oci-network-load-balancer.oraclecloud.com/", "metallb.universe.tf/", "metallb.io/",
	"lbipam.cilium.io/", "io.cilium/", "kube-vip.io/", "purelb.io/", "loxilb.io/", "load-balancer.hetzner.cloud/",
	"service.kubernetes.io/alibaba-cloud-loadbalancer",
}

// statusAnnotations are keys a load balancer controller writes on the Services it serves, to
// say what it did; they configure nothing, and a copy gets its own.
var statusAnnotations = map[string]bool{
	"metallb.universe.tf/ip-allocated-from-pool": true,
	"metallb.io/ip-allocated-from-pool":          true,
	"kube-vip.io/viphost":                        true,
	"purelb.io/allocated-by":                     true,
	"purelb.io/allocated-from":                   true,
	"cloud.google.com/neg-status":                true,
}

// loadBalancerAnnotation says whether an annotation key may configure a load balancer: one of a
// provider's prefixes, or a name that says so, but not a controller's status.
func loadBalancerAnnotation(key string) bool {
	k := strings.ToLower(key)
	if statusAnnotations[k] {
		return false
	}
	for _, p := range providers {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return strings.Contains(k, "load-balancer") || strings.Contains(k, "loadbalancer")
}

// CopyableLoadBalancer says why a temporary load balancer may not be made after orig (nil when
// it may): orig must be of type LoadBalancer — a new load balancer for any other Service could
// be open to whoever the cloud's defaults admit — and have no load balancer annotation the copy
// would not take (LoadBalancerCopy): without it the copy could be reached otherwise than the
// original (its security groups, firewall rules or addresses).
func CopyableLoadBalancer(orig *corev1.Service) error {
	if orig.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return &NotCopyableError{Namespace: orig.Namespace, Name: orig.Name, Type: orig.Spec.Type}
	}
	if left := LoadBalancerCopy(&corev1.Service{}, orig); len(left) > 0 {
		return &NotCopyableError{Namespace: orig.Namespace, Name: orig.Name, Type: orig.Spec.Type, Annotations: left}
	}
	return nil
}

// NotCopyableError is a Service whose load balancer a temporary one may not copy: of another
// type, or with Annotations the copy would not take.
type NotCopyableError struct {
	Namespace, Name string
	Type            corev1.ServiceType
	Annotations     []string
}

func (e *NotCopyableError) Error() string {
	if e.Type != corev1.ServiceTypeLoadBalancer {
		return fmt.Sprintf("Service %s/%s is of type %s, not LoadBalancer: a new load balancer for it could be open to whoever the cloud's defaults admit (--via nodeport enters by a node)", e.Namespace, e.Name, e.Type)
	}
	return fmt.Sprintf("Service %s/%s has load balancer annotations a temporary one may not take (%s): without them it could be reached otherwise than the original (its security groups, firewall rules or addresses); --via nodeport enters by a node", e.Namespace, e.Name, strings.Join(e.Annotations, ", "))
}

// LoadBalancerAddresses are the ingress addresses of family ("4" or "6"): the IPs, else a host name's
// addresses of that family, looked up here (none yet: nil, and the lookup's error).
func LoadBalancerAddresses(ctx context.Context, ingress []corev1.LoadBalancerIngress, family string) ([]netip.Addr, error) {
	var out []netip.Addr
	var last error
	for _, in := range ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Unmap().Is4() == (family == "4") {
			out = append(out, a.Unmap())
		}
	}
	for _, in := range ingress {
		if len(out) > 0 || in.Hostname == "" {
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip"+family, in.Hostname)
		if err != nil {
			last = fmt.Errorf("looking up the load balancer's name %s: %w", in.Hostname, err)
		}
		for _, a := range addrs {
			out = append(out, a.Unmap())
		}
	}
	return out, last
}

// NodeAddress is n's first ExternalIP of family, else its first InternalIP of it ("" if none).
func NodeAddress(n *corev1.Node, family string) string {
	for _, t := range []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP} {
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); a.Type == t && err == nil && ip.Unmap().Is4() == (family == "4") {
				return a.Address
			}
		}
	}
	return ""
}
