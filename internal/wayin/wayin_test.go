package wayin

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A LoadBalancer copy is a load balancer of the original's kind (class, source ranges, the
// annotations that choose its kind, scheme, subnets, families and sources) and takes none that
// name, reuse or pin the original's; those naming a load balancer are returned, to be said.
func TestLoadBalancerCopy(t *testing.T) {
	class := "service.k8s.aws/nlb"
	orig := &corev1.Service{Spec: corev1.ServiceSpec{LoadBalancerClass: &class, LoadBalancerSourceRanges: []string{"192.0.2.0/24"}, LoadBalancerIP: "192.0.2.7"}}
	orig.Annotations = map[string]string{
		"service.beta.kubernetes.io/aws-load-balancer-scheme":                            "internal",
		"service.beta.kubernetes.io/aws-load-balancer-ip-address-type":                   "dualstack",
		"service.beta.kubernetes.io/azure-load-balancer-internal":                        "true",
		"cloud.google.com/load-balancer-type":                                            "Internal",
		"service.beta.kubernetes.io/aws-load-balancer-name":                              "shop",
		"service.beta.kubernetes.io/aws-load-balancer-eip-allocations":                   "eipalloc-1",
		"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id":                       "lb-1",
		"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners": "true",
		"external-dns.alpha.kubernetes.io/hostname":                                      "shop.example.com",
		"service.beta.kubernetes.io/load-balancer-source-ranges":                         "192.0.2.0/24",
		"prometheus.io/scrape":                                                           "true",
	}
	temp := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	left := LoadBalancerCopy(temp, orig)
	want := map[string]string{
		"service.beta.kubernetes.io/aws-load-balancer-scheme":          "internal",
		"service.beta.kubernetes.io/aws-load-balancer-ip-address-type": "dualstack",
		"service.beta.kubernetes.io/azure-load-balancer-internal":      "true",
		"cloud.google.com/load-balancer-type":                          "Internal",
		"service.beta.kubernetes.io/load-balancer-source-ranges":       "192.0.2.0/24",
	}
	if d := cmp.Diff(want, temp.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	wantLeft := []string{"service.beta.kubernetes.io/alibaba-cloud-loadbalancer-force-override-listeners", "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-id",
		"service.beta.kubernetes.io/aws-load-balancer-eip-allocations", "service.beta.kubernetes.io/aws-load-balancer-name"}
	if d := cmp.Diff(wantLeft, left); d != "" {
		t.Errorf("left out and said (-want +got):\n%s", d)
	}
	if temp.Spec.LoadBalancerClass == nil || *temp.Spec.LoadBalancerClass != class || len(temp.Spec.LoadBalancerSourceRanges) != 1 || temp.Spec.LoadBalancerIP != "" {
		t.Errorf("spec %+v: want the class and source ranges, no address", temp.Spec)
	}
}

// Only a LoadBalancer Service whose load balancer annotations a copy all takes may be copied;
// the error says which it is, and errors.As finds it.
func TestCopyableLoadBalancer(t *testing.T) {
	lb := func(typ corev1.ServiceType, ann map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: ann}, Spec: corev1.ServiceSpec{Type: typ}}
	}
	if err := CopyableLoadBalancer(lb(corev1.ServiceTypeLoadBalancer, map[string]string{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
		"service.kubernetes.io/topology-mode": "Auto", "meta.helm.sh/release-name": "shop", "metallb.universe.tf/ip-allocated-from-pool": "lab",
		"kube-vip.io/vipHost": "n1", "purelb.io/allocated-by": "PureLB", "cloud.google.com/neg-status": "{}"})); err != nil {
		t.Errorf("a LoadBalancer Service with a copied annotation and others of no load balancer: %v", err)
	}
	for _, tc := range []struct {
		svc  *corev1.Service
		want string
	}{
		{lb(corev1.ServiceTypeClusterIP, nil), "Service shop/web is of type ClusterIP, not LoadBalancer"},
		{lb(corev1.ServiceTypeLoadBalancer, map[string]string{"service.beta.kubernetes.io/aws-load-balancer-security-groups": "sg-1", "team": "a"}),
			"Service shop/web has load balancer annotations a temporary one may not take (service.beta.kubernetes.io/aws-load-balancer-security-groups)"},
		{lb(corev1.ServiceTypeLoadBalancer, map[string]string{"kubernetes.io/elb.acl-id": "acl-1", "oci.oraclecloud.com/oci-network-security-groups": "nsg-1"}),
			"Service shop/web has load balancer annotations a temporary one may not take (kubernetes.io/elb.acl-id, oci.oraclecloud.com/oci-network-security-groups)"},
	} {
		err := CopyableLoadBalancer(tc.svc)
		var nc *NotCopyableError
		if !errors.As(err, &nc) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a NotCopyableError %q…", tc.svc.Spec.Type, err, tc.want)
		}
	}
}
