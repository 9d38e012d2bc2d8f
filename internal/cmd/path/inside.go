package path

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
)

// errInside: an address given as a destination outside the cluster is inside it.
var errInside = errors.New("an address inside the cluster")

// InsideCluster refuses a destination whose host is an address of a pod, a node or a Service
// of the cluster (as far as this user may list them): it is not a path out of the cluster, and
// its report would price a NAT. An address alone used to name a pod of that name: pod/NAME does.
// arg names the destination in the message (DST, --egress).
func InsideCluster(ctx context.Context, client kubernetes.Interface, arg, dst string) error {
	_, host := egress.SchemeHost(dst)
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	what := whoseAddress(ctx, client, addr)
	if what == "" {
		return nil
	}
	return fmt.Errorf("%s %s: %w: %s's (measure the path to it as a workload: pod/NAME, svc/NAME; an address alone is a host outside the cluster)", arg, host, errInside, what)
}

// whoseAddress names the pod, node or Service of the cluster that holds addr, or "".
func whoseAddress(ctx context.Context, client kubernetes.Interface, addr netip.Addr) string {
	a := addr.String()
	if pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "status.podIP=" + a}); err == nil {
		for _, p := range pods.Items {
			for _, ip := range p.Status.PodIPs {
				if q, err := netip.ParseAddr(ip.IP); err == nil && q == addr {
					return "pod " + p.Namespace + "/" + p.Name
				}
			}
		}
	}
	if nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			for _, na := range n.Status.Addresses {
				if p, err := netip.ParseAddr(na.Address); err == nil && p.Unmap() == addr {
					return "node " + n.Name
				}
			}
		}
	}
	if svcs, err := client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range svcs.Items {
			for _, ip := range s.Spec.ClusterIPs {
				if p, err := netip.ParseAddr(ip); err == nil && p == addr {
					return "Service " + s.Namespace + "/" + s.Name
				}
			}
		}
	}
	return ""
}
