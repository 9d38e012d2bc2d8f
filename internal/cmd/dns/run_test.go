package dns

import (
	"context"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDNSRun(t *testing.T) {
	dnsOK := fakecluster.Events(agent.Event{Type: agent.EventResult, Probe: "dns", Result: &agent.ProbeResult{Name: "dns", Kind: agent.ProbeDNS,
		DNS: &agent.DNSReport{DNSResult: fakecluster.DNSResultSample(), ResolvConf: "nameserver 10.96.0.10\x1b[31m", ResolvConfPath: "/etc/resolv.conf"}}},
		agent.Event{Type: agent.EventExit})
	tests := []struct {
		name  string
		setup func(f *fakecluster.Cluster, o *DNSOptions)
		want  string
	}{
		{name: "success", setup: func(*fakecluster.Cluster, *DNSOptions) {}},
		{name: "no permission", setup: func(f *fakecluster.Cluster, o *DNSOptions) { f.Denied["get pods/log"] = true },
			want: `you may not get pods/log in namespace "shop"`},
		{name: "probe error", setup: func(f *fakecluster.Cluster, o *DNSOptions) {
			f.Script[string(session.RoleDNS)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventError, Probe: "dns", Message: "reading the pod's resolv.conf: /etc/resolv.conf is not a regular file"}))
		}, want: "dns probe in shop/web-1: reading the pod's resolv.conf: /etc/resolv.conf is not a regular file"},
		{name: "host network", setup: func(f *fakecluster.Cluster, o *DNSOptions) {
			p, _ := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
			p.Spec.HostNetwork = true
			_, _ = f.Clientset.CoreV1().Pods("shop").Update(context.Background(), p, metav1.UpdateOptions{})
		}, want: "--allow-host-network"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			f.Script[string(session.RoleDNS)] = fakecluster.Then(dnsOK)
			out := &strings.Builder{}
			o := NewDNSOptions(nil, fakecluster.GenericStreamsTo(out))
			cmdtest.UseCluster(f, &o.CommonOptions)
			o.TargetArg, o.Names = "web-1", []string{"example.com"}
			tc.setup(f, o)
			err := o.Run(context.Background())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), "nameserver 10.96.0.10[31m") {
					t.Errorf("the resolv.conf was printed with its control characters:\n%q", out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
