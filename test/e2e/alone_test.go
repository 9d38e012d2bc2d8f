package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A fidelity test (one with a mutation row in hack/mutations.sh) compares timings with a
// reference, and the lab's user-space delay line shares the two cores with what an earlier
// test's namespace deletion sets off (kubelets stopping pods, kube-proxy and the policy enforcer
// resyncing). After TestLadderService, the zone matrix's cross-zone pairs measured p50 +1.2 ms and
// p99 of 30-50 ms while its namespace went away. So such a test measures only once no other
// test's namespace is left running or with pods. The wait starts in lab() and runs beside the
// test's own setup; alone(t) blocks on it before the first measurement. (Waiting first, and
// until the namespaces were gone, cost each fidelity test 6.5-7.5 s: an empty namespace takes
// 4-5.5 s to go on the lab.)

// quietWait is one fidelity test's wait for the other tests' namespaces to go.
type quietWait struct {
	done   chan struct{}
	start  time.Time
	left   []string // the namespaces still there when the wait gave up
	once   sync.Once
	called bool
}

var quiet sync.Map // top-level test name → *quietWait

// comparesRuns names the tests without a mutation row that also measure alone: they compare
// timings of runs made one after the other, and a namespace going away during one of them moves
// its figures. (TestDiffSeesTheZoneDelay's two runs of an unchanged path, seconds apart, right
// after TestPathMTUThroughANarrowNode: tcp-rtt p50 97 then 167 µs in CI, out of both runs'
// ranges, and the 50 % gate failed. TestMatrixBothFamilies' matrix, right after TestMatrixRates:
// every pair's p50 100-350 µs above ping's taken after it, lab-b1 → lab-b2 1,288 µs against
// 1,030-1,050 µs.)
var comparesRuns = map[string]bool{"TestDiffSeesTheZoneDelay": true, "TestMatrixBothFamilies": true, "TestPathToAnOutsideAgent": true}

// topName is the name of t's top-level test.
func topName(t *testing.T) string { return strings.SplitN(t.Name(), "/", 2)[0] }

// waitAloneBeside starts waiting, up to 3 minutes, until othersLeft names none, and fails
// the test if it never called alone(t) (netbench() calls it before every run of the plugin).
func waitAloneBeside(t *testing.T, cs kubernetes.Interface, own string) {
	t.Helper()
	w := &quietWait{done: make(chan struct{}), start: time.Now()}
	quiet.Store(topName(t), w)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	go func() {
		defer close(w.done)
		w.left = []string{"(the API server did not answer)"}
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			left, err := othersLeft(ctx, cs, own)
			if err == nil {
				w.left = left
			}
			return err == nil && len(left) == 0, nil
		})
		if err == nil {
			w.left = nil
		}
	}()
	t.Cleanup(func() {
		cancel() // a test that ended before it measured does not wait
		<-w.done
		if !w.called && !t.Failed() {
			t.Errorf("%s measures alone but never called alone(t) before measuring", topName(t))
		}
	})
}

// alone blocks until the wait lab() started for this fidelity test is over; for other tests it
// returns at once. netbench() calls it; a test whose reference measures first calls it itself.
func alone(t *testing.T) {
	t.Helper()
	v, ok := quiet.Load(topName(t))
	if !ok {
		return
	}
	w := v.(*quietWait)
	blocked := time.Now()
	<-w.done
	w.once.Do(func() {
		w.called = true
		switch {
		case w.left != nil:
			t.Logf("other tests' namespaces still there after %s: %v; measuring beside them", time.Since(w.start).Round(time.Second), w.left)
		case time.Since(blocked) > 100*time.Millisecond:
			t.Logf("waited %s for other tests' namespaces to go (%s after the test began)", time.Since(blocked).Round(100*time.Millisecond), time.Since(w.start).Round(100*time.Millisecond))
		}
	})
}

// othersLeft names the other tests' e2e namespaces that still run (not being deleted) or still
// hold pods, Services or NetworkPolicies (whose deletion sets kubelets, kube-proxy and the policy
// enforcer to work). Once a namespace is being deleted and those are gone, what is left of it
// (the namespace controller's second pass over the other kinds, 2-4 s on the lab) is the API
// server's and etcd's work alone.
func othersLeft(ctx context.Context, cs kubernetes.Interface, own string) ([]string, error) {
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	busy, err := namespacesWithWork(ctx, cs)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, n := range nss.Items {
		if strings.HasPrefix(n.Name, "e2e-") && n.Name != own && (n.DeletionTimestamp == nil || busy[n.Name]) {
			left = append(left, n.Name)
		}
	}
	return left, nil
}

// namespacesWithWork are the namespaces that hold a pod, a Service or a NetworkPolicy.
func namespacesWithWork(ctx context.Context, cs kubernetes.Interface) (map[string]bool, error) {
	busy := map[string]bool{}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		busy[p.Namespace] = true
	}
	svcs, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		busy[s.Namespace] = true
	}
	nps, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range nps.Items {
		busy[p.Namespace] = true
	}
	return busy, nil
}
