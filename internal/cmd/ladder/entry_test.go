package ladder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
)

// --via nodeport (loadbalancer) --dry-run sends an agent to each endpoint pod and the two
// NodePort (LoadBalancer) copies, Cluster and Local, and creates nothing.
func TestLadderViaNodePortDryRun(t *testing.T) {
	for via, typ := range map[string]string{ViaNodePort: "NodePort", ViaLoadBalancer: "LoadBalancer"} {
		t.Run(via, func(t *testing.T) { testEntryDryRun(t, via, typ) })
	}
}

func testEntryDryRun(t *testing.T, via, typ string) {
	f := svcCluster(t)
	for i, name := range []string{"n1", "n2", "n3"} {
		o, err := f.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
		if err != nil {
			t.Fatal(err)
		}
		n := o.(*corev1.Node)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.0." + string(rune('1'+i))}}
		if err := f.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
			t.Fatal(err)
		}
	}
	if via == ViaLoadBalancer {
		setServiceType(t, f, corev1.ServiceTypeLoadBalancer, nil)
	}
	var policies []string
	f.Clientset.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		policies = append(policies, string(s.Spec.Type)+"/"+string(s.Spec.ExternalTrafficPolicy))
		return false, nil, nil
	})
	o, out := newTestLadderOptions(f)
	o.DstArg, o.Via, o.DryRun, o.Output = "svc/web", via, true, "yaml"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch pods/ephemeralcontainers Pod shop/web-1", "patch pods/ephemeralcontainers Pod shop/web-2",
		"create Service shop/netbench-run1-cluster", "create Service shop/netbench-run1-local"}
	got := cmdtest.DryRunObjects(t, f, out.String())
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("objects (-want +got):\n%s\n%s", diff, out)
	}
	if diff := cmp.Diff([]string{typ + "/Cluster", typ + "/Local"}, policies); diff != "" {
		t.Errorf("copies (-want +got):\n%s", diff)
	}
}

// setServiceType makes svc/web of type typ, with annotations.
func setServiceType(t *testing.T, f *fakecluster.Cluster, typ corev1.ServiceType, annotations map[string]string) {
	t.Helper()
	gvr := corev1.SchemeGroupVersion.WithResource("services")
	o, err := f.Clientset.Tracker().Get(gvr, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	svc := o.(*corev1.Service)
	svc.Spec.Type, svc.Annotations = typ, annotations
	if err := f.Clientset.Tracker().Update(gvr, svc, "shop"); err != nil {
		t.Fatal(err)
	}
}

// --via loadbalancer makes load balancers only after a Service of type LoadBalancer whose
// load balancer annotations the copies all take: anything else is refused before any create.
func TestLadderViaLoadBalancerRefusesOtherServices(t *testing.T) {
	for _, tc := range []struct {
		typ         corev1.ServiceType
		annotations map[string]string
		want        string
	}{
		{corev1.ServiceTypeClusterIP, nil, "--via loadbalancer: Service shop/web is of type ClusterIP, not LoadBalancer"},
		{corev1.ServiceTypeNodePort, nil, "--via loadbalancer: Service shop/web is of type NodePort, not LoadBalancer"},
		{corev1.ServiceTypeLoadBalancer, map[string]string{"service.beta.kubernetes.io/aws-load-balancer-security-groups": "sg-1"},
			"--via loadbalancer: Service shop/web has load balancer annotations a temporary one may not take (service.beta.kubernetes.io/aws-load-balancer-security-groups)"},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			f := svcCluster(t)
			setServiceType(t, f, tc.typ, tc.annotations)
			o, _ := newTestLadderOptions(f)
			o.DstArg, o.Via = "svc/web", ViaLoadBalancer
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			err := o.Run(context.Background())
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q…", err, tc.want)
			}
			for _, a := range f.Clientset.Actions() {
				if (a.GetVerb() == "create" && a.GetResource().Resource != "selfsubjectaccessreviews") || a.GetVerb() == "patch" {
					t.Errorf("%s %s before the refusal", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

// What --via nodeport cannot do is refused in one line naming the flag, before any API call.
func TestLadderViaNodePortRefuses(t *testing.T) {
	for _, tc := range []struct {
		dst  string
		set  func(o *LadderOptions)
		want string
	}{
		{"svc/web", func(o *LadderOptions) { o.Via = "ingress" }, `--via "ingress": want pod, nodeport or loadbalancer`},
		{"svc/web", func(o *LadderOptions) { o.Via, o.NodeSelector = ViaLoadBalancer, "pool=a" }, "--nodes: not with --via loadbalancer"},
		{"svc/web", func(o *LadderOptions) { o.Via, o.Zones = ViaLoadBalancer, []string{"zone-a"} }, "--zones: not with --via loadbalancer"},
		{"deploy/web", func(o *LadderOptions) { o.Via = ViaLoadBalancer }, `--via loadbalancer: DST "deploy/web" must be a Service`},
		{"deploy/web", func(o *LadderOptions) {}, `--via nodeport: DST "deploy/web" must be a Service`},
		{"svc/web", func(o *LadderOptions) { o.HostBaseline = true }, "--host-baseline: not with --via nodeport"},
		{"svc/web", func(o *LadderOptions) { o.Service = "svc/other" }, "--service: not with --via nodeport"},
		{"svc/web", func(o *LadderOptions) { o.IPFamily = "both" }, "--ip-family both: --via nodeport enters by one family"},
		{"svc/web", func(o *LadderOptions) { o.Output = "html" }, "-o html: not with --via nodeport"},
		{"svc/web", func(o *LadderOptions) { o.Mode = "pod" }, "--mode pod: --via nodeport needs agents in the Service's own pods"},
		{"svc/web", func(o *LadderOptions) {
			fs := pflag.NewFlagSet("ladder", pflag.ContinueOnError)
			fs.StringSlice("zones", nil, "")
			fs.StringSlice("probes", nil, "")
			_ = fs.Parse([]string{"--zones", "zone-a", "--probes", "rtt"})
			o.noteViaFlags(fs)
		}, "--probes: not with --via nodeport"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			f := ladderCluster(t)
			o, _ := newTestLadderOptions(f)
			o.DstArg, o.Via = tc.dst, ViaNodePort
			tc.set(o)
			wantRefused(t, f, o.Validate(), tc.want)
		})
	}
}

// A Service with more ready endpoints than --max-endpoints is refused before anything is
// created: an endpoint without an agent would refuse its connections, and a node whose
// endpoints all lack one would read as a node that drops the way in.
func TestLadderViaNodePortNeedsEveryEndpoint(t *testing.T) {
	f := svcCluster(t)
	o, _ := newTestLadderOptions(f)
	o.DstArg, o.Via, o.MaxEndpoints = "svc/web", ViaNodePort, 1
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "--max-endpoints 1: --via nodeport needs an agent in every ready endpoint") {
		t.Errorf("error %v", err)
	}
	for _, a := range f.Clientset.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "create" || v == "create" && a.GetResource().Resource != "selfsubjectaccessreviews" {
			t.Errorf("%s %s before the refusal", v, a.GetResource().Resource)
		}
	}
}

// Through the command itself, a flag --via nodeport does not use is refused by name (cobra's
// local flag set is where it is looked for).
func TestLadderCommandViaNodePortRefusesItsFlags(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kc
	cmd := NewLadderCommand(flags, genericiooptions.IOStreams{In: strings.NewReader(""), Out: &strings.Builder{}, ErrOut: &strings.Builder{}})
	cmd.SetArgs([]string{"svc/web", "--via", "nodeport", "--zones", "zone-a", "--probes", "rtt"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil || !strings.HasPrefix(err.Error(), "--probes: not with --via nodeport") {
		t.Errorf("error %v, want --probes refused", err)
	}
}
