package session

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// FleetLeasePeriod is the lease of a fleet's agents: an agent stops serving (and idles until
// its pod is deleted) when the plugin has not renewed its lease for this long, so agents of a
// plugin killed outright stop within it. The plugin renews every third of it, one call per
// agent through the API server: N calls per 15 s for N agents.
const FleetLeasePeriod = 45 * time.Second

// renewWorkers bounds the lease renewals in flight at once.
const renewWorkers = 16

// keepLeases renews the ready members' leases every Lease/3 until the session closes.
func (f *Fleet) keepLeases() {
	if f.Spec.Lease <= 0 {
		return
	}
	f.s.wg.Add(1)
	go func() {
		defer f.s.wg.Done()
		tick := time.NewTicker(f.Spec.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-f.s.bg.Done():
				return
			case <-tick.C:
				f.renewLeases(f.s.bg)
			}
		}
	}()
}

// renewLeases renews the lease of every ready member once, renewWorkers at a time, each call
// bounded by a third of the lease; failures are logged (at -v), the next round retries.
func (f *Fleet) renewLeases(ctx context.Context) {
	pods := f.readyPods()
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(renewWorkers, len(pods)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range work {
				f.renewLease(ctx, pod)
			}
		}()
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
}

func (f *Fleet) renewLease(ctx context.Context, pod string) {
	ctx, cancel := context.WithTimeout(ctx, f.Spec.Lease/3)
	defer cancel()
	if _, err := f.s.Request(ctx, f.Spec.Namespace, pod, f.Spec.Port, "POST", agent.PathLease, nil); err != nil && f.s.bg.Err() == nil {
		f.s.Logf("renewing the lease of agent pod %s/%s: %v", f.Spec.Namespace, pod, err)
	}
}

// readyPods are the ready members' pods, sorted.
func (f *Fleet) readyPods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pods []string
	for _, m := range f.Members {
		if m.Ready {
			pods = append(pods, m.Pod)
		}
	}
	sort.Strings(pods)
	return pods
}
