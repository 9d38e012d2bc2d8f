package agent

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// MaxMeshJob bounds one job a serving agent runs for a peer measurement (serve --jobs): the
// plugin waits for its answer through the API server, so it must be short.
const MaxMeshJob = 60 * time.Second

// meshProbes are the probes a mesh job may run: the matrix's (the rate probes with --rates),
// each against the peer's agent port with the run's token, like the throughput sink's.
var meshProbes = []string{ProbeICMP, ProbeTCPRTT, ProbeTCP, ProbeTCPRR, ProbeUDPRR, ProbeTCPCRR}

// MaxMeshProbes bounds a mesh job's probes: the matrix's six, each with its IPv6 twin.
const MaxMeshProbes = 2 * 6

// A mesh job's rate probes are the matrix's (--rates) and no larger: one of each kind per
// family, tcp-rr and udp-rr on one client, tcp-crr on MeshCRRClients capped at MeshCRRCap
// connections, default sizes, at most MeshRateSeconds each. Each tcp-crr connection leaves a
// TIME-WAIT socket in the client pod for 60 s and a conntrack entry on the nodes for 120 s,
// and jobs follow each other: a mesh agent's tcp-crr also stops before the pod holds
// MeshTimeWaitCeiling TIME-WAIT sockets, whatever their peers, so one agent adds at most about
// 2 × MeshTimeWaitCeiling conntrack entries per 120 s to its node as a client.
const (
	MeshCRRClients      = 4
	MeshCRRCap          = 500
	MeshRateSeconds     = 10
	MeshTimeWaitCeiling = 5000
)

// ErrNotAPeer means a mesh job aimed at something that cannot be an agent of the run.
var ErrNotAPeer = errors.New("a mesh job measures only agents of its run")

// meshJobs runs jobs posted to PathJob on a server started with --jobs (the matrix's agents,
// which serve their peers and measure them): one at a time, each answered with its events as
// JSON lines once it is over. The caller's token becomes the job's token, so a job can only
// measure servers of the same run, and a job never tells its server to stop. A job must aim
// at a peer's pod IP on this agent's own port with the matrix's probes only (checkMeshJob):
// whoever holds the token cannot turn the agent against another service.
type meshJobs struct {
	busy atomic.Bool
	run  func(ctx context.Context, job Job, em *Emitter) error
}

func (m *meshJobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.busy.CompareAndSwap(false, true) {
		http.Error(w, "a job is already running", http.StatusConflict)
		return
	}
	defer m.busy.Store(false)
	job, err := jobFromRequest(r)
	job.Done, job.mesh = false, true
	if err != nil {
		http.Error(w, "job: "+err.Error(), http.StatusBadRequest)
		return
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if err := checkMeshJob(job, local); err != nil {
		http.Error(w, "job: "+err.Error(), http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxMeshJob)
	defer cancel()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(MaxMeshJob + 5*time.Second))
	var out bytes.Buffer
	_ = m.run(ctx, job, NewEmitter(&out)) // a failed probe is an error event in the answer
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(out.Bytes())
}

// checkMeshJob refuses a job that could measure anything but a peer of the same run: its
// target must be an IP address (peers are addressed by pod IP) on the port this agent was
// reached on (every agent of a run listens on the same one), and it may only run the matrix's
// probes against that target, never against an address or URL of their own.
func checkMeshJob(job Job, local net.Addr) error {
	own, ok := local.(*net.TCPAddr)
	switch {
	case !ok:
		return fmt.Errorf("%w: this agent cannot tell its own port", ErrNotAPeer)
	case net.ParseIP(job.Host) == nil:
		return fmt.Errorf("%w: host %q is not an IP address", ErrNotAPeer, job.Host)
	case !peerAddress(net.ParseIP(job.Host)):
		return fmt.Errorf("%w: host %s is not a unicast address a pod can have", ErrNotAPeer, job.Host)
	case len(job.Probes) > MaxMeshProbes:
		return fmt.Errorf("%w: %d probes, the matrix's are at most %d", ErrNotAPeer, len(job.Probes), MaxMeshProbes)
	case job.Port != own.Port:
		return fmt.Errorf("%w: port %d is not the agents' port %d", ErrNotAPeer, job.Port, own.Port)
	}
	twinHost := ""
	seen := map[string]bool{}
	for _, p := range job.Probes {
		key := p.Kind + "/" + p.Host
		if IsRateProbe(p.Kind) && seen[key] {
			return fmt.Errorf("%w: two %s probes for one family: the matrix's runs one", ErrNotAPeer, p.Kind)
		}
		seen[key] = true
		if !slices.Contains(meshProbes, p.Kind) || p.Address != "" || p.URL != "" {
			return fmt.Errorf("%w: probe %s is not one of %v against the peer", ErrNotAPeer, p.Label(), meshProbes)
		}
		if err := checkTwinHost(p); err != nil {
			return err
		}
		if err := checkMeshRate(p); err != nil {
			return err
		}
		if p.Host != "" && twinHost != "" && p.Host != twinHost {
			return fmt.Errorf("%w: probes aim at %s and %s: the peer has one IPv6 address", ErrNotAPeer, twinHost, p.Host)
		}
		twinHost = cmp.Or(p.Host, twinHost)
	}
	return nil
}

// checkMeshRate holds a mesh job's rate probe to the matrix's own (see MeshCRRCap).
func checkMeshRate(p ProbeSpec) error {
	clients := 1
	switch p.Kind {
	case ProbeTCPCRR:
		clients = MeshCRRClients
		if p.Count < 1 || p.Count > MeshCRRCap {
			return fmt.Errorf("%w: probe %s caps its connections at %d: the matrix's is 1-%d", ErrNotAPeer, p.Label(), p.Count, MeshCRRCap)
		}
	case ProbeTCPRR, ProbeUDPRR:
	default:
		return nil
	}
	if p.Connections > clients || p.Size != 0 || p.ResponseSize != 0 || p.DurationSeconds > MeshRateSeconds {
		return fmt.Errorf("%w: probe %s with %d clients, sizes %d/%d, %gs: the matrix's are at most %d clients, the default sizes, %d s",
			ErrNotAPeer, p.Label(), p.Connections, p.Size, p.ResponseSize, p.DurationSeconds, clients, MeshRateSeconds)
	}
	return nil
}

// peerAddress says whether ip can be a pod's: unicast, not link-local, not unspecified (one
// address, never a group of hosts).
func peerAddress(ip net.IP) bool {
	return !ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsLinkLocalUnicast() && !ip.Equal(net.IPv4bcast)
}

// checkTwinHost admits a probe's own host only for an IPv6 twin (named *-v6, the matrix's
// --ip-family both): the peer's IPv6 address, a unicast literal like the job's host.
func checkTwinHost(p ProbeSpec) error {
	if p.Host == "" {
		return nil
	}
	ip := net.ParseIP(p.Host)
	if ip == nil || ip.To4() != nil || !peerAddress(ip) || !strings.HasSuffix(p.Label(), v1alpha1.IPv6ProbeSuffix) {
		return fmt.Errorf("%w: probe %s aims at host %q: only an IPv6 twin (*%s) may, at an IPv6 address", ErrNotAPeer, p.Label(), p.Host, v1alpha1.IPv6ProbeSuffix)
	}
	return nil
}
