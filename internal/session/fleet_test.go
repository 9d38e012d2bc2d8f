package session

import (
	"github.com/google/go-cmp/cmp"

	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// A job goes only from a ready member and only to a ready member: its host and port are the
// target agent's whatever the caller set, an IPv6 twin's its IPv6 address, and a probe of
// another address is refused; nothing is posted for a refused job.
func TestFleetJobsAimOnlyAtMembers(t *testing.T) {
	members := func() map[string]*Member {
		return map[string]*Member{
			"a": {Node: "a", Pod: "pod-a", IP: "10.0.0.1", Ready: true},
			"b": {Node: "b", Pod: "pod-b", IP: "10.0.0.2", IPs: []string{"10.0.0.2", "fd00::2"}, Ready: true},
			"c": {Node: "c", Pod: "pod-c", IP: "10.0.0.3", Problem: "starting (Pending)"},
		}
	}
	job := agent.Job{APIVersion: agent.APIVersion, Host: "192.0.2.80", Port: 80, Probes: []agent.ProbeSpec{{Kind: agent.ProbeTCPRTT, Count: 5}}}
	elsewhere := job
	elsewhere.Probes = []agent.ProbeSpec{{Kind: agent.ProbeTCPRTT, Count: 5, Address: "192.0.2.80:80"}}
	otherHost := job
	otherHost.Probes = []agent.ProbeSpec{{Kind: agent.ProbeTCPRTT, Count: 5, Host: "192.0.2.80"}}
	twins := job
	twins.Probes = []agent.ProbeSpec{{Kind: agent.ProbeTCPRTT, Count: 5}, {Kind: agent.ProbeTCPRTT, Name: "tcp-rtt-v6", Count: 5}}
	tests := []struct {
		name     string
		from, to string
		job      agent.Job
		wantPost []string // "POD HOST:PORT"
		wantErr  error
	}{
		{"member to member", "a", "b", job, []string{"pod-a 10.0.0.2:24930"}, nil},
		{"to a member not ready", "a", "c", job, nil, ErrNotAMember},
		{"to a node without a member", "a", "x", job, nil, ErrNotAMember},
		{"from a member not ready", "c", "a", job, nil, ErrNotAMember},
		{"a probe of another address", "a", "b", elsewhere, nil, ErrNotAMember},
		{"a probe of another host", "a", "b", otherHost, nil, ErrNotAMember},
		{"an IPv6 twin aims at the member's IPv6 address", "a", "b", twins, []string{"pod-a 10.0.0.2:24930 tcp-rtt-v6@fd00::2"}, nil},
		{"an IPv6 twin to a member without one: the IPv4 probes still run", "b", "a", twins, []string{"pod-b 10.0.0.1:24930"}, ErrMemberFamily},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute)
			var posted []string
			s.Request = func(_ context.Context, _, pod string, _ int, _, _ string, body []byte) ([]byte, error) {
				var j agent.Job
				if err := json.Unmarshal(body, &j); err != nil {
					t.Fatal(err)
				}
				post := pod + " " + text.JoinHostPort(j.Host, j.Port)
				for _, p := range j.Probes {
					if p.Host != "" {
						post += " " + p.Label() + "@" + p.Host
					}
				}
				posted = append(posted, post)
				var out strings.Builder
				agent.NewEmitter(&out).Emit(agent.Event{Type: agent.EventProgress, Message: "measured"})
				return []byte(out.String()), nil
			}
			f := &Fleet{s: s, Spec: FleetSpec{Namespace: "netbench", Port: 24930}, Members: members()}
			_, err := f.Run(context.Background(), tc.from, tc.to, tc.job)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if d := cmp.Diff(tc.wantPost, posted); d != "" {
				t.Errorf("posted (-want +got):\n%s", d)
			}
		})
	}
}

// One round of renewals posts the lease of every ready member, once, and of nothing else.
func TestFleetLeaseRenewals(t *testing.T) {
	tests := []struct {
		name    string
		members map[string]*Member
		want    []string
	}{
		{"every ready member", map[string]*Member{
			"a": {Pod: "pod-a", Ready: true}, "b": {Pod: "pod-b", Ready: true}, "c": {Pod: "pod-c", Ready: true},
		}, []string{"POST pod-a " + agent.PathLease, "POST pod-b " + agent.PathLease, "POST pod-c " + agent.PathLease}},
		{"not the members not ready", map[string]*Member{
			"a": {Pod: "pod-a", Ready: true}, "b": {Pod: "pod-b", Problem: "starting (Pending)"}, "c": {Problem: "no pod yet"},
		}, []string{"POST pod-a " + agent.PathLease}},
		{"none ready", map[string]*Member{"a": {Problem: "no pod yet"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute)
			var mu sync.Mutex
			var posted []string
			s.Request = func(_ context.Context, _, pod string, _ int, method, path string, _ []byte) ([]byte, error) {
				mu.Lock()
				defer mu.Unlock()
				posted = append(posted, method+" "+pod+" "+path)
				return nil, nil
			}
			f := &Fleet{s: s, Spec: FleetSpec{Namespace: "netbench", Port: 24930, Lease: time.Minute}, Members: tc.members}
			f.renewLeases(context.Background())
			slices.Sort(posted)
			if d := cmp.Diff(tc.want, posted); d != "" {
				t.Errorf("renewals (-want +got):\n%s", d)
			}
		})
	}
}

// A started fleet renews its members' leases every third of the lease, never a look-alike's,
// and stops renewing when the session closes; its agents are told the lease and to idle when
// done.
func TestFleetRenewsLeasesUntilClose(t *testing.T) {
	f := fakecluster.NewFleet(3, 1)
	f.LookAlikes = func(ds *appsv1.DaemonSet) []*corev1.Pod {
		return []*corev1.Pod{fakecluster.Impostor(f, ds, func(*corev1.Pod) {})}
	}
	s := NewSession(f.Clientset, "run1", "token", "img", ModePod, time.Minute)
	s.Request = f.Request
	nodes := []string{"node-00000", "node-00001", "node-00002"}
	hostnames := map[string]string{}
	for _, n := range nodes {
		hostnames[n] = n
	}
	const lease = 150 * time.Millisecond
	fl, err := s.StartFleet(context.Background(), FleetSpec{Namespace: "netbench", Nodes: nodes, Hostnames: hostnames, Port: 24930, Lifetime: time.Minute, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.WaitReady(context.Background(), 5*time.Second, func(int, int) {}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4*lease/3 + lease/6) // four rounds: at 1/3, 2/3, 3/3 and 4/3 of the lease
	renewals := func() map[string]int {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		n := map[string]int{}
		for _, c := range f.Posted {
			if pod, path, _ := strings.Cut(c, " "); path == agent.PathLease {
				n[pod]++
			}
		}
		return n
	}
	got := renewals()
	for _, n := range nodes {
		if c := got["netbench-run1-mesh-"+n]; c < 3 || c > 5 {
			t.Errorf("the agent on %s was renewed %d times in 1.5 leases: want 4 (every third of the lease)", n, c)
		}
	}
	if got["impostor"] != 0 {
		t.Errorf("the look-alike's lease was renewed %d times", got["impostor"])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed := renewals()
	time.Sleep(lease)
	if d := cmp.Diff(closed, renewals()); d != "" {
		t.Errorf("renewals after Close (-before +after):\n%s", d)
	}
	args := strings.Join(fakecluster.CreatedDaemonSet(t, f).Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, " --idle-when-done ") || !strings.HasSuffix(args, " --lease "+lease.String()) {
		t.Errorf("agent args %q: want the lease and --idle-when-done", args)
	}
}

// Messages from the cluster (events, container states) print on one line without control or
// bidirectional-formatting characters, and cut when long.
func TestClusterText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"pods \"x\" is forbidden: violates PodSecurity", "pods \"x\" is forbidden: violates PodSecurity"},
		{"line one\nline two\r\n", "line one line two"},
		{"\x1b[2J\x1b[31mred\x07", "[2J[31mred"},
		{"evil\u202eexe.txt", "evilexe.txt"},
		{strings.Repeat("é", 400), strings.Repeat("é", maxClusterText) + "…"},
	}
	for _, tc := range tests {
		if got := clusterText(tc.in); got != tc.want {
			t.Errorf("clusterText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// When the DaemonSet makes no pod, its controller's event is told cleaned.
func TestFleetControllerSaysCleaned(t *testing.T) {
	cs := fake.NewClientset(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "netbench"},
		InvolvedObject: corev1.ObjectReference{Name: "netbench-run1-mesh", UID: types.UID("u")}, Type: corev1.EventTypeWarning,
		Reason: "FailedCreate", Message: "quota exceeded\n\x1b[1mnow\u202e"})
	s := NewSession(cs, "run1", "token", "img", ModePod, time.Minute)
	f := &Fleet{s: s, Name: "netbench-run1-mesh", Spec: FleetSpec{Namespace: "netbench"}}
	if got, want := f.controllerSays(context.Background()), "the DaemonSet created no pod: FailedCreate: quota exceeded [1mnow"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A member whose pod stops running the agent alone (an ephemeral container added) is no longer
// a member; a pod the DaemonSet adopted that is not its agent is named as the reason a node
// has no agent until the DaemonSet's own pod comes.
func TestFleetMemberTrust(t *testing.T) {
	s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute)
	f := &Fleet{s: s, Name: "netbench-run1-mesh", Spec: FleetSpec{Namespace: "netbench", Nodes: []string{"n1"}, Port: 24930}, UID: "uid-1",
		Members: map[string]*Member{"n1": {Node: "n1", Problem: "no pod yet"}}}
	ds := f.daemonSet(nil)
	ds.UID = f.UID
	f.template = ds.Spec.Template.Spec
	agentPod := func(name string, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
			Spec:   *ds.Spec.Template.Spec.DeepCopy(),
			Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		p.Spec.NodeName = "n1"
		mod(p)
		return p
	}
	steps := []struct {
		pod  *corev1.Pod
		want Member
	}{
		{agentPod("adopted", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "netbench.lab/pause:1" }),
			Member{Node: "n1", Problem: "pod adopted is not trusted: it runs image netbench.lab/pause:1, not img"}},
		{agentPod("agent", func(*corev1.Pod) {}), Member{Node: "n1", Pod: "agent", IP: "10.0.0.1", IPs: []string{"10.0.0.1"}, Ready: true}},
		{agentPod("agent", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
		}), Member{Node: "n1", Problem: "its pod agent is no longer trusted: it runs other containers than the agent"}},
	}
	for i, st := range steps {
		f.update(st.pod)
		if d := cmp.Diff(st.want, *f.Members["n1"], cmp.AllowUnexported(Member{}), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".created" }, cmp.Ignore())); d != "" {
			t.Errorf("step %d (%s): member (-want +got):\n%s", i+1, st.pod.Name, d)
		}
	}
}

// An image pinned to its digest by an admission webhook is still the agent's image.
func TestSameImage(t *testing.T) {
	tests := []struct {
		image, want string
		same        bool
	}{
		{"ghcr.io/x/agent:v1", "ghcr.io/x/agent:v1", true},
		{"ghcr.io/x/agent:v1@sha256:abc", "ghcr.io/x/agent:v1", true},
		{"ghcr.io/x/agent@sha256:abc", "ghcr.io/x/agent:v1", true},
		{"registry:5000/agent@sha256:abc", "registry:5000/agent", true},
		{"ghcr.io/x/agent:v2", "ghcr.io/x/agent:v1", false},
		{"ghcr.io/x/agent:v1x", "ghcr.io/x/agent:v1", false},
		{"ghcr.io/x/agent-evil@sha256:abc", "ghcr.io/x/agent:v1", false},
	}
	for _, tc := range tests {
		if got := sameImage(tc.image, tc.want); got != tc.same {
			t.Errorf("sameImage(%q, %q) = %v, want %v", tc.image, tc.want, got, tc.same)
		}
	}
}

// A member's address jobs aim at is its pod's of the fleet's family; a pod without one is not
// ready, and says why.
func TestFleetMemberFamily(t *testing.T) {
	for _, tc := range []struct {
		family, ip, problem string
		ips                 []string
	}{
		{"", "10.0.0.1", "", []string{"10.0.0.1", "fd00::1"}},
		{"6", "fd00::1", "", []string{"10.0.0.1", "fd00::1"}},
		{"4", "10.0.0.1", "", []string{"fd00::1", "10.0.0.1"}},
		{"6", "", "its pod agent has no IPv6 address (it has 10.0.0.1)", []string{"10.0.0.1"}},
	} {
		s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute)
		f := &Fleet{s: s, Name: "netbench-run1-mesh", Spec: FleetSpec{Namespace: "netbench", Nodes: []string{"n1"}, Port: 24930, IPFamily: tc.family}, UID: "uid-1",
			Members: map[string]*Member{"n1": {Node: "n1", Problem: "no pod yet"}}}
		ds := f.daemonSet(nil)
		ds.UID = f.UID
		f.template = ds.Spec.Template.Spec
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
			Spec:   *ds.Spec.Template.Spec.DeepCopy(),
			Status: corev1.PodStatus{PodIP: tc.ips[0], Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		p.Spec.NodeName = "n1"
		for _, ip := range tc.ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		f.update(p)
		if m := f.Members["n1"]; m.IP != tc.ip || m.Ready != (tc.ip != "") || m.Problem != tc.problem {
			t.Errorf("family %q, pod IPs %v: member %+v, want IP %q, problem %q", tc.family, tc.ips, *m, tc.ip, tc.problem)
		}
	}
}
