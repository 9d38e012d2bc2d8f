package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
)

// Labels every temporary pod carries, so that `kubectl delete pods -l` can always find them.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kubectl-netbench"
	RunIDLabel     = "netbench.kubectl.dev/run-id"
	RoleLabel      = "netbench.kubectl.dev/role"
)

// Modes of starting agents.
const (
	ModeEphemeral = "ephemeral"
	ModePod       = "pod"
	ModeAuto      = "auto"
)

// Role is what an agent does in a run; it names the container or pod.
type Role string

// Roles of agents.
const (
	RoleServer  Role = "server"
	RoleClient  Role = "client"
	RoleDNS     Role = "dns"
	RoleCapture Role = "capture"
	// RoleEndpoint serves in a Service's endpoint pod, answering who it is.
	RoleEndpoint Role = "endpoint"
	// RolePolicy labels a temporary NetworkPolicy (--allow-policy).
	RolePolicy Role = "network-policy"
)

// Errors a caller may act on with errors.Is.
var (
	ErrEphemeralUnsupported = errors.New("ephemeral containers are not enabled on this cluster (use --mode pod)")
	ErrStartTimeout         = errors.New("the agent did not start in time")
)

// Lease timing: a server agent exits when the plugin has not renewed its lease for LeasePeriod;
// the plugin renews it every LeasePeriod/5 through the API server's pod proxy.
const LeasePeriod = 5 * time.Second

// cleanupTimeout bounds Close, which runs on a fresh context after an interrupt.
const cleanupTimeout = 20 * time.Second

// AgentSpec says what one agent does and where.
type AgentSpec struct {
	Role   Role
	Target *Target // the pod whose network the agent joins (ephemeral) or whose node it uses (pod)
	// Serve runs the agent server; otherwise the agent runs Job.
	Serve bool
	Job   *agent.Job
	// InlineJob gives a runner its job on its command line instead of through the pod proxy
	// (which a NetworkPolicy may block): only for jobs that need no token (app-port probes),
	// since the pod object keeps the command line for good.
	InlineJob bool
	// Lifetime bounds the agent: it exits by now + Lifetime (API server clock) whatever happens.
	Lifetime time.Duration
	// Capture runs the agent as root with CAP_NET_RAW and nothing else, for packet capture.
	Capture bool
	// StopsOnDone marks a runner whose job keeps its hand-over listener (a DNS capacity ramp):
	// closing the session tells it to stop even after the hand-over.
	StopsOnDone bool
	// Placement, when set, runs the agent in a temporary pod on a chosen node whatever the
	// session's mode (a ladder's clients); Target then only gives the namespace.
	Placement *Placement
	// Suffix keeps the agent's name apart from the run's other agents of the same role.
	Suffix string
	// Port is the port a server listens on (0: any free port); Identity what it answers
	// on agent.PathWhoAmI.
	Port     int
	Identity agent.Identity
}

// Placement puts a temporary agent pod on a node, with tolerations, in the node's own network
// namespace when HostNetwork is set.
type Placement struct {
	Node        string
	Tolerations []corev1.Toleration
	HostNetwork bool
}

// Session is one run's agents: their id, token, mode, image and clock. Start adds agents; one
// Close ends every agent still running and deletes what the run created.
type Session struct {
	Client       kubernetes.Interface
	RunID        string
	Token        string
	Image        string
	Mode         string // ModeEphemeral or ModePod
	StartTimeout time.Duration
	// DryRun sends every create and patch with dryRun=All and keeps the answers (Planned):
	// nothing is persisted, no agent runs, and waiting for agents returns at once.
	DryRun bool
	dry    dryRun
	// PullSecrets are the imagePullSecrets of temporary agent pods and DaemonSets.
	PullSecrets []corev1.LocalObjectReference
	// Resources of temporary agent pods and DaemonSets (nil: the namespace's LimitRange decides).
	Resources *corev1.ResourceRequirements
	// Now is the API server's clock (for not-after times); Logf prints diagnostics at -v.
	Now  func() time.Time
	Logf func(format string, args ...any)
	// Logs opens an agent's output and Proxy sends a control request to a server agent through
	// the API server; both are fields so that tests can script them.
	Logs  func(ctx context.Context, a *Agent, opts *corev1.PodLogOptions) (io.ReadCloser, error)
	Proxy func(ctx context.Context, a *Agent, method, path string, body []byte) error
	// Request sends a request to a pod's port through the API server's pod proxy, with the run
	// token, and returns the answer's body.
	Request func(ctx context.Context, namespace, pod string, port int, method, path string, body []byte) ([]byte, error)

	// trusted are the addresses the agents trust before they present the token (the API
	// server's: its pod proxy carries the plugin's requests), read once.
	trustOnce sync.Once
	trusted   []string

	mu       sync.Mutex
	agents   []*Agent
	services []*corev1.Service             // temporary Services the run created
	slices   []*discoveryv1.EndpointSlice  // their endpoints, for Services without a selector
	Policies []*networkingv1.NetworkPolicy // temporary NetworkPolicies (--allow-policy)
	fleets   []*Fleet
	closed   bool
	creating sync.WaitGroup     // creates admitted by begin and not yet ended
	stop     context.CancelFunc // ends lease renewals and followers
	bg       context.Context
	wg       sync.WaitGroup
}

// NewSession returns a session; Close must be called on every path once it exists.
func NewSession(client kubernetes.Interface, runID, token, image, mode string, startTimeout time.Duration) *Session {
	bg, stop := context.WithCancel(context.Background())
	s := &Session{
		Client: client, RunID: runID, Token: token, Image: image, Mode: mode, StartTimeout: startTimeout,
		Now: time.Now, Logf: func(string, ...any) {}, bg: bg, stop: stop,
	}
	s.Logs, s.Proxy, s.Request = s.podLogs, s.podProxy, s.podRequest
	return s
}

// Agent is one agent this session started.
type Agent struct {
	s         *Session
	Spec      AgentSpec
	Namespace string
	Pod       string
	Container string
	IP        string
	IPs       []string // every address of its pod, one per family, IP first
	Temporary bool     // a temporary pod, deleted by Close
	NotAfter  time.Time
	Port      int // a server's port, once ready

	mu         sync.Mutex
	lastEvent  time.Time
	exited     bool   // the agent said it exited
	handedOver bool   // a runner was handed its job
	serverNote string // the last error a server reported after ready
	endedBy    string // why a followed server said it exited
	renewErr   error  // the outcome of the last lease renewal: nil when it got through
}

// Name of the agent's container (ephemeral) or pod (pod mode).
func (s *Session) Name(spec AgentSpec) string {
	n := fmt.Sprintf("netbench-%s-%s", s.RunID, spec.Role)
	if spec.Suffix != "" {
		n += "-" + spec.Suffix
	}
	return n
}

// Start adds an agent. Nothing is left behind when it fails; once it succeeds, or when an
// interrupt lost the answer to a create that may have happened, Close owns it.
func (s *Session) Start(ctx context.Context, spec AgentSpec) (*Agent, error) {
	a := &Agent{s: s, Spec: spec, Namespace: spec.Target.Namespace, NotAfter: s.Now().Add(spec.Lifetime).Truncate(time.Second).Add(time.Second)}
	args, err := a.args(s.trust(ctx))
	if err != nil {
		return nil, err
	}
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.creating.Done()
	if a.inPod() {
		err = s.createPod(ctx, a, args)
	} else {
		err = s.addEphemeral(ctx, a, args)
	}
	if s.DryRun {
		return a, err
	}
	if err != nil && !mayExist(ctx, err) {
		return nil, err
	}
	s.mu.Lock()
	s.agents = append(s.agents, a)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return a, nil
}

// ErrClosed means the session is closed: it creates nothing more.
var ErrClosed = errors.New("the session is closed")

// begin admits one create, unless Close has begun; the caller calls creating.Done when the
// create has ended and what it may have made is registered. Close waits for every create
// admitted before it, so that an object whose create was in flight is deleted too.
func (s *Session) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.creating.Add(1)
	return nil
}

// args are the agent's command line: serve or run, where it listens, its not-after time and
// the token's digest. Neither the token nor the job is in the spec (the pod object keeps
// every ephemeral container for good): a runner is handed its job through the pod proxy.
func (a *Agent) args(trust []string) ([]string, error) {
	listen := ":" + strconv.Itoa(a.Spec.Port)
	notAfter := a.NotAfter.UTC().Format(time.RFC3339)
	digest := agent.TokenDigest(a.s.Token)
	if a.Spec.Serve {
		args := []string{"serve", "--listen", listen}
		// The server listens on the pod's addresses only, one of each family it has.
		if a.inPod() {
			args = append(args, "--ip", "$(POD_IPS)")
		} else if ips := PodIPs(a.Spec.Target.Pod); len(ips) > 0 {
			args = append(args, "--ip", strings.Join(ips, ","))
		}
		args = append(append(args, "--not-after", notAfter, "--lease", LeasePeriod.String(), "--token-sha256", digest), trust...)
		id := a.Spec.Identity
		for _, fv := range [][2]string{{"--pod", id.Pod}, {"--node", id.Node}, {"--zone", id.Zone}} {
			if fv[1] != "" {
				args = append(args, fv[0], fv[1])
			}
		}
		return args, nil
	}
	if a.Spec.Job == nil {
		return nil, errors.New("an agent that does not serve needs a job")
	}
	if a.Spec.InlineJob {
		job := *a.Spec.Job
		job.Token = ""
		b, err := json.Marshal(job)
		if err != nil {
			return nil, err
		}
		a.handedOver = true
		return []string{"run", "--job", string(b), "--not-after", notAfter}, nil
	}
	// A runner takes its job on the pod's primary address only (bracketed: an IPv6 address has
	// colons; Go takes an IPv4 address in brackets too).
	if a.inPod() {
		listen = "[$(POD_IP)]" + listen
	} else if a.Spec.Target.Pod.Status.PodIP != "" {
		listen = net.JoinHostPort(a.Spec.Target.Pod.Status.PodIP, strconv.Itoa(a.Spec.Port))
	}
	return append([]string{"run", "--listen", listen, "--not-after", notAfter, "--await-job", HandoverWindow.String(), "--token-sha256", digest}, trust...), nil
}

// trust is the agents' --trust argument: the API server's addresses (the default/kubernetes
// Service's endpoints), whose connections — the plugin's, through the pod proxy — the agents'
// bounds on strangers then never count, so that no number of strangers can keep the plugin
// out. None when they cannot be read; the agents then trust the API server from its first
// request with the token.
func (s *Session) trust(ctx context.Context) []string {
	s.trustOnce.Do(func() {
		var addrs []string
		for _, a := range APIServerAddrs(ctx, s.Client) {
			addrs = append(addrs, a.String())
		}
		if len(addrs) > 0 {
			s.trusted = []string{"--trust", strings.Join(addrs, ",")}
		}
	})
	return s.trusted
}

// HandoverWindow is how long a runner agent waits for its job before it exits.
const HandoverWindow = 10 * time.Second

// inPod says whether the agent runs in a temporary pod of its own.
func (a *Agent) inPod() bool { return a.s.Mode == ModePod || a.Spec.Placement != nil }

func (a *Agent) env() []corev1.EnvVar {
	if !a.inPod() {
		return faultEnv()
	}
	return append([]corev1.EnvVar{fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_IPS", "status.podIPs")}, faultEnv()...)
}

// faultEnv passes the plugin's injected faults on to its agents; only a build with the tag
// netbench_faults has any (internal/fault).
func faultEnv() []corev1.EnvVar {
	if v := fault.Value(); v != "" {
		return []corev1.EnvVar{{Name: fault.Env, Value: v}}
	}
	return nil
}

func (s *Session) Labels(r Role) map[string]string {
	return map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: s.RunID, RoleLabel: string(r)}
}

// Agents returns the agents started so far.
func (s *Session) Agents() []*Agent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.agents)
}

func (a *Agent) String() string {
	if a.Temporary {
		return fmt.Sprintf("%s agent (pod %s/%s)", a.Spec.Role, a.Namespace, a.Pod)
	}
	return fmt.Sprintf("%s agent (%s/%s, container %s)", a.Spec.Role, a.Namespace, a.Pod, a.Container)
}

// PodIPs are the pod's addresses, one per family, the primary first.
func PodIPs(p *corev1.Pod) []string {
	var ips []string
	for _, a := range p.Status.PodIPs {
		if a.IP != "" {
			ips = append(ips, a.IP)
		}
	}
	if len(ips) == 0 && p.Status.PodIP != "" {
		ips = append(ips, p.Status.PodIP)
	}
	return ips
}
