package wayin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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
