package wayin

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// WaitAddresses waits, up to timeout, for the load balancer addresses of family ("4" or "6")
// in Service ns/name's status (a host name is looked up here). None in time: the wait's error,
// and the last error on the way (reading the Service, looking up its name), nil if none.
func WaitAddresses(ctx context.Context, client kubernetes.Interface, ns, name, family string, timeout time.Duration) (addrs []netip.Addr, waitErr, last error) {
	waitErr = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		addrs, last = LoadBalancerAddresses(ctx, got.Status.LoadBalancer.Ingress, family)
		return len(addrs) > 0, nil
	})
	return addrs, waitErr, last
}

// WaitAnswer waits, up to timeout, until addr answers one connection with an agent's identity
// (a request with a proof of token on agent.PathWhoAmI), and returns that answer; none in
// time: the wait's error, and the last try's result (nil if none got that far).
func WaitAnswer(ctx context.Context, addr, token string, timeout time.Duration) (*probes.EntryResult, error) {
	var last *probes.EntryResult
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		res, err := probes.Enter(ctx, probes.EntrySpec{Address: addr, Path: agent.PathWhoAmI, Token: token, Connections: 1})
		if err == nil {
			last = res
		}
		return err == nil && len(res.Answered) == 1, nil
	})
	return last, err
}

// NodeAddrs names the node of every address the nodes list.
func NodeAddrs(nodes []corev1.Node) report.NodeAddrs {
	out := report.NodeAddrs{}
	for i := range nodes {
		for _, a := range nodes[i].Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				out[ip.Unmap()] = nodes[i].Name
			}
		}
	}
	return out
}

// NoAddress is the error of a temporary LoadBalancer Service ns/name that got no address of
// family within timeout, with the last error on the way (nil: none).
func NoAddress(ns, name, family string, timeout time.Duration, last error) error {
	msg := fmt.Sprintf("the temporary LoadBalancer Service %s/%s got no IPv%s address within --start-timeout %s: does a load balancer controller serve this cluster's Services of type LoadBalancer (a cloud's can take minutes: raise --start-timeout)?", ns, name, family, timeout)
	if last != nil {
		return fmt.Errorf("%s (last: %w)", msg, last)
	}
	return errors.New(msg)
}

// ManyAddresses is the warning when the load balancer of Service name has more than one address
// of the family: the way in takes the first.
func ManyAddresses(name, family string, addrs []netip.Addr) string {
	return fmt.Sprintf("the load balancer of %s has %d IPv%s addresses (%v): entered by %s alone (a load balancer with an address per zone and no cross-zone balancing reaches only that zone's nodes)", name, len(addrs), family, addrs, addrs[0])
}
