// Package ifstat reads what a network namespace's interfaces and a process's own I/O say about a
// stretch of its work: every byte and packet the namespace's interfaces (all but loopback)
// carried, and the bytes this process read and wrote. An agent in an application's pod shares the
// pod's interface with the application, so the difference is the application's own traffic
// during the probe: what competed with the probe for the path.
package ifstat

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Headers is what one counted packet carries besides payload, in bytes, on the paths an agent
// measures: Ethernet 14, IPv4 20 (IPv6 40), TCP 20 with 12 of options (timestamps). A packet the
// kernel counts once, a GSO/GRO aggregate of many segments too, carries one set of headers; UDP's
// and ICMP's are shorter (42 bytes over IPv4), so for the agents' datagrams the subtraction takes
// a little more than they carried.
const (
	HeadersIPv4 = 14 + 20 + 32
	HeadersIPv6 = 14 + 40 + 32
)

// own counts what the process's sockets moved that /proc/self/io does not: datagrams received
// with recvmsg or sent with sendto (CountOwn), and TCP retransmissions (retransmitted, also in
// own: CountRetransmitted).
var own, retransmitted atomic.Int64

// CountOwn adds n bytes the process put on or took off the network without read(2) or write(2):
// a datagram through recvmsg or sendto.
func CountOwn(n int64) {
	if n > 0 {
		own.Add(n)
	}
}

// CountRetransmitted adds n bytes a TCP stream of the process sent again: on its interface, not
// in its write count — and, where the first copy arrived too, on the peer's interface and not
// in the peer's read count.
func CountRetransmitted(n int64) {
	if n > 0 {
		own.Add(n)
		retransmitted.Add(n)
	}
}

// Sample is the namespace's interface counters and the process's own I/O at one moment.
type Sample struct {
	At time.Time
	// Bytes and Packets are the sums over every interface but loopback, received and sent
	// (/proc/net/dev of the process's network namespace).
	Bytes, Packets int64
	// OwnBytes is what the process passed to read and write so far (/proc/self/io rchar and
	// wchar: its TCP payload, and its few reads of /proc and writes of events), and what
	// CountOwn and CountRetransmitted added.
	OwnBytes int64
	// Retransmitted is what CountRetransmitted added so far.
	Retransmitted int64
	// OK is false when the counters could not be read.
	OK bool
}

// Use is what happened between two samples.
type Use struct {
	Wall               time.Duration
	Bytes, Packets     int64
	OwnBytes           int64
	OtherBytes         int64 // at least this much was not the process's: Other
	OtherBitsPerSecond float64
}

// Read samples the interfaces of this process's network namespace and its own I/O.
func Read() Sample {
	s := Sample{At: time.Now()}
	dev, err1 := os.ReadFile("/proc/net/dev")
	io, err2 := os.ReadFile("/proc/self/io")
	if err1 != nil || err2 != nil {
		return s
	}
	s.Bytes, s.Packets = parseDev(dev)
	s.Retransmitted = retransmitted.Load()
	s.OwnBytes = parseIO(io) + own.Load()
	s.OK = true
	return s
}

// Since is the use from an earlier sample to s, with headers (HeadersIPv4 or HeadersIPv6)
// per packet; the zero Use when either could not be read or a counter went back (an interface
// went away, or a sample that is not this process's).
func (s Sample) Since(before Sample, headers int64) Use {
	u := Use{Wall: s.At.Sub(before.At), Bytes: s.Bytes - before.Bytes, Packets: s.Packets - before.Packets, OwnBytes: s.OwnBytes - before.OwnBytes}
	if !s.OK || !before.OK || u.Wall <= 0 || u.Bytes < 0 || u.Packets < 0 || u.OwnBytes < 0 {
		return Use{}
	}
	u.OtherBytes = Other(u.Bytes, u.Packets, u.OwnBytes, headers)
	u.OtherBitsPerSecond = float64(u.OtherBytes) * 8 / u.Wall.Seconds()
	return u
}

// Other is how many of an interface's bytes were at least not the process's: all it carried, less
// the process's own payload and every packet's headers (headers each), never below zero.
func Other(bytes, packets, own, headers int64) int64 {
	return max(0, bytes-own-packets*headers)
}

// parseDev sums received and sent bytes and packets over every interface but lo in the contents
// of /proc/net/dev: two header lines, then "name: rx-bytes rx-packets … (8 fields) tx-bytes
// tx-packets …".
func parseDev(b []byte) (bytesSum, packets int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(name) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 10 {
			continue
		}
		bytesSum += num(f[0]) + num(f[8])
		packets += num(f[1]) + num(f[9])
	}
	return bytesSum, packets
}

// parseIO is rchar + wchar from the contents of /proc/self/io.
func parseIO(b []byte) int64 {
	var sum int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && (k == "rchar" || k == "wchar") {
			sum += num(strings.TrimSpace(v))
		}
	}
	return sum
}

func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
