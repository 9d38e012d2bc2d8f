package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

type fakeRoutes map[netip.Addr]string

func (f fakeRoutes) set(a netip.Addr, hops []netip.Addr) error { f[a] = fmt.Sprint(hops); return nil }
func (f fakeRoutes) del(a netip.Addr) error                    { delete(f, a); return nil }
func (f fakeRoutes) flush(netip.Prefix) error                  { return nil }

func lbService(name string, age int, policy corev1.ServiceExternalTrafficPolicy, hc int32, status ...string) *corev1.Service {
	created := metav1.NewTime(time.Unix(1e9-int64(age), 0))
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: created},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: policy, HealthCheckNodePort: hc}}
	for _, ip := range status {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return s
}

func labNode(name, ip string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

// Every LoadBalancer Service gets an address of the pool (one it holds is kept, a younger
// second holder of it gets another), written in its status; Cluster goes to every Ready node, Local
// only to those whose health check answers 200; a Service another controller gave an address is
// left alone; a Service gone takes its route away.
func TestReconcile(t *testing.T) {
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer health.Close()
	port, _ := strconv.Atoi(health.URL[len("http://127.0.0.1:"):])
	cs := fake.NewClientset(
		labNode("up", "127.0.0.1", corev1.ConditionTrue), labNode("down", "127.0.0.2", corev1.ConditionFalse), labNode("far", "127.0.0.3", corev1.ConditionTrue),
		lbService("held", 2, corev1.ServiceExternalTrafficPolicyCluster, 0, "10.77.64.7"),
		lbService("dup", 1, corev1.ServiceExternalTrafficPolicyCluster, 0, "10.77.64.7"),
		lbService("local", 0, corev1.ServiceExternalTrafficPolicyLocal, int32(port)),
		lbService("cloud", 3, corev1.ServiceExternalTrafficPolicyCluster, 0, "192.0.2.50"),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns"}})
	r := fakeRoutes{}
	c := &controller{client: cs, router: r, pools: []netip.Prefix{netip.MustParsePrefix("10.77.64.0/24")}, applied: map[netip.Addr]string{}, failed: map[string]int{}}
	if err := c.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range []string{"held", "dup", "local", "plain", "cloud"} {
		s, _ := cs.CoreV1().Services("ns").Get(context.Background(), name, metav1.GetOptions{})
		for _, in := range s.Status.LoadBalancer.Ingress {
			got[name] += in.IP
		}
	}
	if d := cmp.Diff(map[string]string{"held": "10.77.64.7", "dup": "10.77.64.1", "local": "10.77.64.2", "cloud": "192.0.2.50"}, got); d != "" {
		t.Errorf("addresses (-want +got):\n%s", d)
	}
	want := fakeRoutes{netip.MustParseAddr("10.77.64.7"): "[127.0.0.1 127.0.0.3]", netip.MustParseAddr("10.77.64.1"): "[127.0.0.1 127.0.0.3]",
		netip.MustParseAddr("10.77.64.2"): "[127.0.0.1]"}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("routes (-want +got):\n%s", d)
	}
	if err := cs.CoreV1().Services("ns").Delete(context.Background(), "dup", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := r[netip.MustParseAddr("10.77.64.1")]; ok || len(r) != 2 {
		t.Errorf("routes %v: want dup's address released", r)
	}
}
