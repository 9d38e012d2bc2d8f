package ladder

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func dualStackService(ips ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: ips[0], ClusterIPs: ips}}
}

func dualStackPod(name string, ips ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Status.PodIP = ips[0]
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// A dual-stack Service is measured through each ClusterIP: the second family's probes are named
// with its suffix (-v6, or -v4 where IPv6 is primary), and each spread probe's straight
// handshakes go to the endpoint agents' addresses of its own family.
func TestServiceProbesPerClusterIP(t *testing.T) {
	for _, tc := range []struct {
		name      string
		family    string
		svc, temp []string
		want      map[string]string // probe → address
		direct    map[string]string // spread probe → the endpoint's straight address
	}{
		{"--ip-family 6", "6", []string{"10.96.0.5", "fd00::5"}, []string{"10.96.0.9", "fd00::9"},
			map[string]string{"svc-tcp-rtt": "[fd00::5]:80", "svc-spread": "[fd00::9]:80"},
			map[string]string{"svc-spread": "[fd00:10:244:1::7]:23456"}},
		{"--ip-family 4", "4", []string{"10.96.0.5", "fd00::5"}, []string{"10.96.0.9", "fd00::9"},
			map[string]string{"svc-tcp-rtt": "10.96.0.5:80", "svc-spread": "10.96.0.9:80"},
			map[string]string{"svc-spread": "10.244.1.7:23456"}},
		{"IPv4 primary", "", []string{"10.96.0.5", "fd00::5"}, []string{"10.96.0.9", "fd00::9"},
			map[string]string{"svc-tcp-rtt": "10.96.0.5:80", "svc-tcp-rtt-v6": "[fd00::5]:80", "svc-spread": "10.96.0.9:80", "svc-spread-v6": "[fd00::9]:80"},
			map[string]string{"svc-spread": "10.244.1.7:23456", "svc-spread-v6": "[fd00:10:244:1::7]:23456"}},
		{"IPv6 primary", "", []string{"fd00::5", "10.96.0.5"}, []string{"fd00::9", "10.96.0.9"},
			map[string]string{"svc-tcp-rtt": "[fd00::5]:80", "svc-tcp-rtt-v4": "10.96.0.5:80", "svc-spread": "[fd00::9]:80", "svc-spread-v4": "10.96.0.9:80"},
			map[string]string{"svc-spread": "[fd00:10:244:1::7]:23456", "svc-spread-v4": "10.244.1.7:23456"}},
		{"single stack", "", []string{"10.96.0.5"}, []string{"10.96.0.9"},
			map[string]string{"svc-tcp-rtt": "10.96.0.5:80", "svc-spread": "10.96.0.9:80"},
			map[string]string{"svc-spread": "10.244.1.7:23456"}},
		{"headless", "", []string{corev1.ClusterIPNone}, nil, map[string]string{}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewLadderOptions(nil, genericiooptions.IOStreams{})
			o.Profile, o.IPFamily = "quick", tc.family
			pod := dualStackPod("web-1", "10.244.1.7", "fd00:10:244:1::7")
			if strings.Contains(tc.svc[0], ":") {
				pod = dualStackPod("web-1", "fd00:10:244:1::7", "10.244.1.7")
			}
			sr := &serviceRun{svc: dualStackService(tc.svc...), port: corev1.ServicePort{Port: 80}, agentPort: 23456,
				measured: []cmdutil.Endpoint{{Pod: "web-1"}}, pods: []*corev1.Pod{pod}}
			if tc.temp != nil {
				sr.temp = dualStackService(tc.temp...)
			}
			got, direct := map[string]string{}, map[string]string{}
			for _, p := range o.serviceProbes(sr) {
				switch p.Kind {
				case agent.ProbeTCPRTT, agent.ProbeSpread:
					got[p.Name] = p.Address
				}
				if p.Kind == agent.ProbeSpread {
					direct[p.Name] = p.Direct["web-1"]
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("probes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.direct, direct); d != "" {
				t.Errorf("straight addresses (-want +got):\n%s", d)
			}
		})
	}
}

// Each ClusterIP's connections are summed on their own: the primary's in Spread, the second
// family's in SpreadSecondary, each with its address and family.
func TestAddSpreadPerFamily(t *testing.T) {
	o := NewLadderOptions(nil, genericiooptions.IOStreams{})
	sr := &serviceRun{temp: dualStackService("10.96.0.9", "fd00::9"), measured: []cmdutil.Endpoint{{Pod: "a"}, {Pod: "b"}}, ready: []cmdutil.Endpoint{{Pod: "a"}, {Pod: "b"}}}
	spread := func(name string, byZone map[string]int) *v1alpha1.ProbeResult {
		n := 0
		for _, c := range byZone {
			n += c
		}
		return &v1alpha1.ProbeResult{Name: name, Kind: agent.ProbeSpread, Spread: &v1alpha1.SpreadResult{Connections: n, Answered: n, ByZone: byZone}}
	}
	rep := &report.LadderReport{Rungs: []report.LadderRung{{Name: "same-zone", Zone: "zone-a", Results: []v1alpha1.LadderRound{
		{Round: 1, AppPort: []*v1alpha1.ProbeResult{spread("svc-spread", map[string]int{"zone-a": 100}), spread("svc-spread-v6", map[string]int{"zone-a": 50, "zone-b": 50})}},
	}}}}
	o.addSpread(rep, sr)
	r := rep.Rungs[0]
	if r.Spread == nil || r.Spread.IPFamily != "IPv4" || r.Spread.ClusterIP != "10.96.0.9" || r.Spread.SameZonePercent != 100 || r.Spread.Answered != 100 {
		t.Errorf("IPv4 spread %+v", r.Spread)
	}
	if r.SpreadSecondary == nil || r.SpreadSecondary.IPFamily != "IPv6" || r.SpreadSecondary.ClusterIP != "fd00::9" || r.SpreadSecondary.SameZonePercent != 50 {
		t.Errorf("IPv6 spread %+v", r.SpreadSecondary)
	}
}

// --ip-family 6 on a DST without an IPv6 address is refused with one line naming the flag
// and the pod, before any agent starts.
func TestLadderIPFamilyRefused(t *testing.T) {
	f := ladderCluster(t)
	var created []string
	f.OnCreate = func(p *corev1.Pod) { created = append(created, p.Name) }
	o, _ := newTestLadderOptions(f)
	o.IPFamily = "6"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--ip-family 6: pod shop/web-1: no address of that family: no IPv6 address (it has 10.0.0.5)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err %v", err)
	}
	if left := fakecluster.AgentPods(t, f); len(left) != 0 || len(created) != 0 {
		t.Errorf("agents made: %v %v", left, created)
	}
}

// --ip-family 4 on a Service without an IPv4 ClusterIP is refused, naming the flag and the
// Service, before anything is created.
func TestLadderServiceFamilyRefused(t *testing.T) {
	f := svcCluster(t)
	o, _ := newTestLadderOptions(f)
	o.Service, o.IPFamily = "svc/web", "4"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	svc, _ := f.Clientset.CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
	svc.Spec.ClusterIPs = []string{"fd00::5"}
	svc.Spec.ClusterIP = "fd00::5"
	if _, err := f.Clientset.CoreV1().Services("shop").Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--ip-family 4: Service shop/web has no IPv4 ClusterIP (it has fd00::5)") {
		t.Fatalf("err %v", err)
	}
}
