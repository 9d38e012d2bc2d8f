package probes

import (
	"bufio"
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// timeWaitLen is how long Linux keeps a TIME-WAIT socket (TCP_TIMEWAIT_LEN, fixed).
const timeWaitLen = 60 * time.Second

// defaultPortRange is Linux's default net.ipv4.ip_local_port_range (32768-60999), assumed
// where the setting cannot be read.
const defaultPortRange = 60999 - 32768 + 1

// portBudget counts the ports a tcp-crr probe's connections hold: those open, and those closed
// less than timeWaitLen ago (in TIME-WAIT on this side, each holding its port towards the
// server's address). take refuses once the budget is reached.
type portBudget struct {
	mu       sync.Mutex
	size     int
	budget   int
	open     int
	closedAt []time.Time // oldest first
	peak     int
	twBefore int
	twToDst  int
}

// newPortBudget allows half the pod's ephemeral port range less the TIME-WAIT sockets the pod
// already has towards dst (host:port; a previous round's): a port in TIME-WAIT is held towards
// its peer only, connect(2) gives it again towards another (the matrix's next pairs). Where dst
// is not an address, or the sockets cannot be read, every TIME-WAIT socket of the pod counts.
// A positive podCeiling also holds the pod's TIME-WAIT sockets, whatever their peers, to it.
func newPortBudget(dst string, podCeiling int) *portBudget {
	size := portRangeSize()
	tw := timeWaitSockets()
	toDst := tw
	if ap, err := netip.ParseAddrPort(dst); err == nil {
		if n, ok := timeWaitTo(ap); ok {
			toDst = n
		}
	}
	budget := max(0, size/2-max(toDst, 0))
	if podCeiling > 0 {
		budget = min(budget, max(0, podCeiling-max(tw, 0)))
	}
	return &portBudget{size: size, budget: budget, twBefore: tw, twToDst: toDst}
}

// timeWaitTo counts this network namespace's TIME-WAIT sockets towards dst (/proc/net/tcp and
// tcp6: state 06, the remote address and port); false when neither file can be read.
func timeWaitTo(dst netip.AddrPort) (int, bool) {
	n, read := 0, false
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		read = true
		n += countTimeWait(data, dst)
	}
	return n, read
}

// countTimeWait counts the lines of a /proc/net/tcp{,6} table in TIME-WAIT towards dst.
func countTimeWait(table []byte, dst netip.AddrPort) int {
	n := 0
	for _, line := range strings.Split(string(table), "\n") {
		if !strings.Contains(line, " 06 ") { // the state column: most lines are not in TIME-WAIT
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "06" {
			continue
		}
		if ap, ok := procAddr(f[2]); ok && ap.Addr().Unmap() == dst.Addr().Unmap() && ap.Port() == dst.Port() {
			n++
		}
	}
	return n
}

// procAddr reads an address as /proc/net/tcp prints it: the address's 32-bit words in hex,
// each in host (little-endian) order, a colon, the port in hex.
func procAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(h)/2)
	for w := 0; w < len(h)/8; w++ {
		v, err := strconv.ParseUint(h[8*w:8*w+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		binary.LittleEndian.PutUint32(b[4*w:], uint32(v))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a, uint16(port)), true
}

// take reserves a port for a new connection; false when the budget is reached.
func (p *portBudget) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	cut := time.Now().Add(-timeWaitLen)
	i := 0
	for i < len(p.closedAt) && p.closedAt[i].Before(cut) {
		i++
	}
	p.closedAt = p.closedAt[i:]
	if p.open+len(p.closedAt) >= p.budget {
		return false
	}
	p.open++
	p.peak = max(p.peak, p.open+len(p.closedAt))
	return true
}

// release gives a connection's port back: into TIME-WAIT when it was connected and closed
// by this side, at once when it never connected.
func (p *portBudget) release(connected bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open--
	if connected {
		p.closedAt = append(p.closedAt, time.Now())
	}
}

func (p *portBudget) result() *v1alpha1.EphemeralPorts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &v1alpha1.EphemeralPorts{RangeSize: p.size, Budget: p.budget, PeakHeld: p.peak, TimeWaitBefore: p.twBefore, TimeWaitToServer: p.twToDst, TimeWaitAfter: timeWaitSockets()}
}

// portRangeOverride, when positive, is the range size tests pretend the pod has.
var portRangeOverride int

// portRangeSize is how many ports net.ipv4.ip_local_port_range of this network namespace holds.
func portRangeSize() int {
	if portRangeOverride > 0 {
		return portRangeOverride
	}
	lo, hi, ok := readRange("/proc/sys/net/ipv4/ip_local_port_range")
	if !ok || hi < lo {
		return defaultPortRange
	}
	return int(hi - lo + 1)
}

// timeWaitSockets is the TIME-WAIT count of this network namespace's TCP sockets
// (/proc/net/sockstat: "TCP: inuse N orphan N tw N ..."); -1 when unreadable.
func timeWaitSockets() int {
	f, err := os.Open("/proc/net/sockstat")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(fields); i += 2 {
			if fields[i] == "tw" {
				if n, err := strconv.Atoi(fields[i+1]); err == nil {
					return n
				}
			}
		}
	}
	return -1
}
