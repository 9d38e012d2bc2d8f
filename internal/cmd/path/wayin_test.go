package path

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
)

// path here DST --via nodeport --dry-run sends the server agent, the temporary Service and its
// one endpoint with dryRun=All, and creates nothing; the client is this process.
func TestWayInDryRun(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	n2 := fakecluster.LabNode("n2", "z2", func(n *corev1.Node) {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.12"}}
	})
	if err := f.Clientset.Tracker().Add(n2); err != nil {
		t.Fatal(err)
	}
	f.Clientset.ClearActions()
	o, out := newTestPathOptions(f)
	o.SrcArg, o.Via, o.DryRun, o.Output = Here, ViaNodePort, true, "yaml"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"patch pods/ephemeralcontainers Pod shop/web-1",
		"create Service shop/netbench-run1-way-in",
		"create EndpointSlice shop/netbench-run1-way-in",
	}
	if diff := cmp.Diff(want, cmdtest.DryRunObjects(t, f, out.String())); diff != "" {
		t.Errorf("objects (-want +got):\n%s\n%s", diff, out)
	}
	for _, a := range f.Clientset.Actions() {
		c, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetResource().Resource != "services" {
			continue
		}
		svc := c.GetObject().(*corev1.Service)
		p := svc.Spec.Ports
		if len(p) != 2 || p[0].Port == 0 || p[0].TargetPort.IntValue() != int(p[0].Port) || p[1].Protocol != corev1.ProtocolUDP || p[1].Port != p[0].Port ||
			len(svc.OwnerReferences) != 1 || svc.OwnerReferences[0].Kind != "Pod" || svc.OwnerReferences[0].Name != "web-1" || svc.Spec.Selector != nil {
			t.Errorf("the Service sent: ports %+v, owners %+v, selector %v: want TCP and UDP on the agent's port, owned by pod web-1, no selector", p, svc.OwnerReferences, svc.Spec.Selector)
		}
	}
}

// SRC here takes --via and its flags, one clear line for each misuse, before any API call; no
// other SRC takes them.
func TestWayInRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*PathOptions)
		wantErr string
	}{
		{"no --via", func(o *PathOptions) { o.SrcArg = Here }, `--via "": SRC here enters the cluster from this machine`},
		{"--via pod", func(o *PathOptions) { o.SrcArg, o.Via = Here, "pod" }, `--via "pod": SRC here enters`},
		{"--via without here", func(o *PathOptions) { o.Via = ViaNodePort }, "--via, --entry-node and --external-traffic-policy are for SRC here"},
		{"--entry-node without here", func(o *PathOptions) { o.EntryNode = "n1" }, "are for SRC here"},
		{"--external-traffic-policy without here", func(o *PathOptions) { o.ExternalTrafficPolicy = "Local" }, "are for SRC here"},
		{"a URL", func(o *PathOptions) { o.SrcArg, o.Via, o.DstArg = Here, ViaNodePort, "https://a.example.com/" }, "DST https://a.example.com/: SRC here enters the cluster"},
		{"an outside agent", func(o *PathOptions) { o.SrcArg, o.Via, o.DstArg = Here, ViaNodePort, "agent://vm:7443" }, "DST agent://vm:7443: SRC here"},
		{"policy", func(o *PathOptions) { o.SrcArg, o.Via, o.ExternalTrafficPolicy = Here, ViaNodePort, "local" }, `--external-traffic-policy "local": want Cluster or Local`},
		{"--entry-node with a load balancer", func(o *PathOptions) { o.SrcArg, o.Via, o.EntryNode = Here, ViaLoadBalancer, "n1" }, "--entry-node: only with --via nodeport"},
		{"--src-container", func(o *PathOptions) { o.SrcArg, o.Via, o.SrcContainer = Here, ViaNodePort, "c" }, "--src-container and --allow-host-network are for a SRC in the cluster"},
		{"--mode pod", func(o *PathOptions) { o.SrcArg, o.Via, o.Mode = Here, ViaNodePort, "pod" }, "--mode pod: SRC here"},
		{"--allow-policy", func(o *PathOptions) { o.SrcArg, o.Via, o.AllowPolicy = Here, ViaNodePort, true }, "--allow-policy: not with SRC here"},
		{"--port", func(o *PathOptions) { o.SrcArg, o.Via, o.Port = Here, ViaNodePort, 80 }, "--port and --http-path: not with SRC here"},
		{"--ip-family both", func(o *PathOptions) { o.SrcArg, o.Via, o.IPFamily = Here, ViaNodePort, FamilyBoth }, "--ip-family both: SRC here enters by one family"},
		{"loaded-rtt", func(o *PathOptions) { o.SrcArg, o.Via, o.Probes = Here, ViaNodePort, []string{"udp", "loaded-rtt"} }, "--probes loaded-rtt: not with SRC here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			o.SrcArg, o.DstArg = "deploy/frontend", "svc/web"
			tc.change(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, tc.wantErr)
			}
		})
	}
}

// --via loadbalancer takes only a Service of type LoadBalancer whose load balancer annotations
// the temporary one can all take, refused in one line before anything is created: a new load
// balancer for anything else could be open to anyone.
func TestWayInLoadBalancerOnlyForLoadBalancers(t *testing.T) {
	sg := map[string]string{"service.beta.kubernetes.io/aws-load-balancer-security-groups": "sg-1"}
	for _, tc := range []struct {
		name, dst   string
		typ         corev1.ServiceType
		annotations map[string]string
		wantErr     string
	}{
		{"a pod", "web-1", corev1.ServiceTypeClusterIP, nil, "--via loadbalancer: DST web-1 must be a Service of type LoadBalancer"},
		{"ClusterIP", "SVC/web-1", corev1.ServiceTypeClusterIP, nil, "--via loadbalancer: Service shop/web-1 is of type ClusterIP, not LoadBalancer"},
		{"security groups", "svc/web-1", corev1.ServiceTypeLoadBalancer, sg, "load balancer annotations a temporary one may not take (service.beta.kubernetes.io/aws-load-balancer-security-groups)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", Annotations: tc.annotations},
				Spec: corev1.ServiceSpec{Type: tc.typ, Selector: map[string]string{"app": "web"}}}
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			if err := f.Clientset.Tracker().Add(web); err != nil {
				t.Fatal(err)
			}
			o, _ := newTestPathOptions(f)
			o.SrcArg, o.DstArg, o.Via, o.Namespace = Here, tc.dst, ViaLoadBalancer, "shop"
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			err := o.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, tc.wantErr)
			}
			for _, a := range f.Clientset.Actions() {
				if v := a.GetVerb(); v == "create" || v == "patch" || v == "update" {
					t.Errorf("%s %s before the refusal", v, a.GetResource().Resource)
				}
			}
		})
	}
}

// The grpc probe is refused where this process would send it through HTTPS_PROXY, and runs where
// NO_PROXY covers the address entered.
func TestWayInGRPCNotThroughAProxy(t *testing.T) {
	grpc := []agent.ProbeSpec{{Kind: agent.ProbeGRPC}}
	t.Setenv("HTTPS_PROXY", "http://u:secret@proxy.example:3128")
	t.Setenv("NO_PROXY", "")
	if err := grpcProxied(grpc, "192.0.2.11"); err == nil || !strings.Contains(err.Error(), "--probes grpc: gRPC from this machine to 192.0.2.11 would go through the proxy") || strings.Contains(err.Error(), "secret") {
		t.Errorf("through a proxy: %v", err)
	}
	if err := grpcProxied([]agent.ProbeSpec{{Kind: agent.ProbeUDP}}, "192.0.2.11"); err != nil {
		t.Errorf("no grpc probe: %v", err)
	}
	t.Setenv("NO_PROXY", "192.0.2.0/24")
	if err := grpcProxied(grpc, "192.0.2.11"); err != nil {
		t.Errorf("in NO_PROXY: %v", err)
	}
}
