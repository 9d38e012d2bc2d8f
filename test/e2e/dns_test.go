package e2e

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func dnsJSON(t *testing.T, args ...string) *v1alpha1.DNSReport {
	t.Helper()
	r := runJSON[v1alpha1.DNSReport](t, append([]string{"dns"}, args...)...)
	if r.APIVersion != v1alpha1.APIVersion || r.Kind != "DNSReport" || r.Result == nil || r.Result.ResolvConf == "" || r.Result.Detection == "" {
		t.Fatalf("required fields missing: %+v", r)
	}
	return r
}

func variantOf(t *testing.T, r *v1alpha1.DNSReport, name, label string) (queries, nx int, answered string) {
	t.Helper()
	for _, n := range r.Result.Names {
		if n.Name != name {
			continue
		}
		for _, v := range n.Variants {
			if v.Label == label {
				return v.Queries, v.NXDomains, v.AnsweredBy
			}
		}
	}
	t.Fatalf("no %q variant for %s", label, name)
	return
}

func resolverDeployment(t *testing.T, cs kubernetes.Interface, ns, name, libc string) {
	t.Helper()
	d := deployment(name, "", "netbench.lab/resolver-"+libc+":1", []string{"--idle"})
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, name)
}

// waitRollout waits until the deployment's newest pods all run and old ones are gone.
func waitRollout(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want && d.Status.Replicas == want, nil
	})
	if err != nil {
		t.Fatalf("deployment %s not rolled out", name)
	}
}

// The report for the real glibc and musl clients: resolv.conf, the detected resolver and how,
// per-name counts, a timeline, what-ifs and a patch; applying the patch gives the predicted counts.
func TestDNSReportAndPatch(t *testing.T) {
	cs, ns := lab(t)
	for _, libc := range []string{"glibc", "musl"} {
		t.Run(libc, func(t *testing.T) {
			resolverDeployment(t, cs, ns, "app-"+libc, libc)
			r := dnsJSON(t, "-n", ns, "deploy/app-"+libc)
			if string(r.Result.Resolver) != libc || !strings.Contains(r.Result.Detection, libc) {
				t.Errorf("resolver %s (%s), want %s", r.Result.Resolver, r.Result.Detection, libc)
			}
			if !strings.Contains(r.Result.ResolvConf, "options ndots:5") || !strings.Contains(r.Result.ResolvConf, "search "+ns+".svc.cluster.local") {
				t.Errorf("resolv.conf:\n%s", r.Result.ResolvConf)
			}
			// ndots:5, 3 search domains: kubernetes.default is found under the 2nd, example.com as is.
			for name, want := range map[string][3]any{
				"kubernetes.default": {4, 2, "kubernetes.default.svc.cluster.local."},
				"example.com":        {8, 6, "example.com."},
			} {
				q, nx, ans := variantOf(t, r, name, "as configured")
				if q != want[0] || nx != want[1] || ans != want[2] {
					t.Errorf("%s %s: %d queries, %d NXDOMAIN, answered by %q; want %v", libc, name, q, nx, ans, want)
				}
			}
			if q, nx, _ := variantOf(t, r, "example.com", "trailing dot"); q != 2 || nx != 0 {
				t.Errorf("example.com. (trailing dot): %d queries, %d NXDOMAIN; want 2, 0", q, nx)
			}
			timelineOK := false
			for _, n := range r.Result.Names {
				timelineOK = timelineOK || len(n.Timeline) >= 2
			}
			if !timelineOK || r.Patch == nil || r.Owner != "deployment/app-"+libc {
				t.Fatalf("timeline %v, patch %+v, owner %q", timelineOK, r.Patch, r.Owner)
			}
			// Apply the suggested patch as printed, then measure again: the counts are the
			// ones predicted for that ndots.
			predicted := map[string]int{}
			for _, n := range r.Result.Names {
				q, _, _ := variantOf(t, r, n.Name, "ndots:"+strconv.Itoa(r.Patch.Ndots))
				predicted[n.Name] = q
			}
			cmd := strings.Replace(r.Patch.Command, "kubectl ", "", 1)
			args := append([]string{"--kubeconfig", kubeconfigPath()}, splitShell(cmd)...)
			if out, err := exec.Command(labKubectl(), args...).CombinedOutput(); err != nil {
				t.Fatalf("applying %s: %v %s", r.Patch.Command, err, out)
			}
			waitRollout(t, cs, ns, "app-"+libc)
			after := dnsJSON(t, "-n", ns, "deploy/app-"+libc)
			if after.Result.Config.Ndots != r.Patch.Ndots {
				t.Errorf("after the patch ndots is %d, want %d", after.Result.Config.Ndots, r.Patch.Ndots)
			}
			for name, want := range predicted {
				if q, _, _ := variantOf(t, after, name, "as configured"); q != want {
					t.Errorf("%s after the patch: %d queries, predicted %d", name, q, want)
				}
			}
		})
	}
}

// With the 4th search domain (as on EKS), an external name costs glibc 10 queries, 8 NXDOMAIN.
func TestDNSFourSearchDomains(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "search4", "on")
	t.Cleanup(func() { labScript(t, "search4", "off") })
	resolverDeployment(t, cs, ns, "app4", "glibc")
	r := dnsJSON(t, "-n", ns, "deploy/app4", "example.com", "api.example.com")
	if !strings.Contains(r.Result.ResolvConf, "compute.internal") {
		t.Fatalf("no 4th search domain:\n%s", r.Result.ResolvConf)
	}
	for _, name := range []string{"example.com", "api.example.com"} {
		if q, nx, ans := variantOf(t, r, name, "as configured"); q != 10 || nx != 8 || ans != name+"." {
			t.Errorf("%s: %d queries, %d NXDOMAIN, answered by %q; want 10, 8, %s.", name, q, nx, ans, name)
		}
	}
}

// The default report (3 names × 20 warm repeats, with what-ifs) on the warm lab.
func TestDNSDefaultReportWallTime(t *testing.T) {
	cs, ns := lab(t)
	resolverDeployment(t, cs, ns, "app", "glibc")
	start := time.Now()
	out, stderr, err := netbench(t, "dns", "-n", ns, "deploy/app")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"resolver: glibc", "resolv.conf (", "Timeline of one cold lookup", "trailing dot", "ndots:1", "ndots:2", "Fixes", "kubectl patch -n " + ns + " deployment/app"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	t.Logf("default dns report took %.1f s (goal ≤ 5 s)\n%s", time.Since(start).Seconds(), out)
}

func labKubectl() string { return "../../.cache/lab/bin/kubectl" }

// splitShell splits the printed patch command; it quotes its JSON in single quotes.
func splitShell(s string) []string {
	var out []string
	for s != "" {
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, "'") {
			end := strings.Index(s[1:], "'")
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
