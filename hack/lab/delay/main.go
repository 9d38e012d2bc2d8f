// Command delay is the lab's zone latency: a userspace delay line on netfilter queues. This
// kernel has no netem, so iptables rules in a node's network namespace send the node's egress
// to another node into NFQUEUE; this program holds each packet for its queue's one-way delay
// and then accepts it. A queue given a rate instead is a bottleneck (bottleneck.go).
//
//	delay 1=200us 2=1ms      # queue 1 (same zone) 200 µs, queue 2 (cross zone) 1 ms
//	delay 3=50mbit/fifo/1000000
//
// It speaks nfnetlink_queue directly over a netlink socket (golang.org/x/sys/unix): it only
// needs packet ids (NFQNL_COPY_META) and verdicts.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	nfnlSubsysQueue   = 3
	nfqnlMsgPacket    = 0
	nfqnlMsgVerdict   = 1
	nfqnlMsgConfig    = 2
	nfqaPacketHdr     = 1
	nfqaVerdictHdr    = 2
	nfqaCfgCmd        = 1
	nfqaCfgParams     = 2
	nfqaCfgQueueMax   = 3
	nfqnlCfgCmdBind   = 1
	nfqnlCopyMeta     = 1
	nfAccept          = 1
	spinBelow         = 60 * time.Microsecond // sleep until this close to the release, then spin
	defaultQueueLimit = 8192
)

type packet struct {
	id  uint32
	due time.Time
}

type queue struct {
	num   uint16
	delay time.Duration
	ch    chan packet
	link  *link // a bottleneck instead of a delay
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: delay QUEUE=DURATION...")
		os.Exit(2)
	}
	queues := parseQueues(os.Args[1:])
	fd := openNetlink()
	var sendMu sync.Mutex
	send := func(b []byte) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	for _, q := range queues {
		bindQueue(q, send)
		if q.link != nil {
			q.link.send = send
			go q.link.run()
			fmt.Printf("queue %d: bottleneck %s\n", q.num, os.Args[1:])
			continue
		}
		go release(q, send)
		fmt.Printf("queue %d: one-way delay %s\n", q.num, q.delay)
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		os.Exit(0) // the kernel unbinds the queues with the socket; --queue-bypass lets traffic through
	}()
	receive(fd, queues)
}

// parseQueues reads the QUEUE=DURATION arguments; a bad one ends the program.
func parseQueues(args []string) map[uint16]*queue {
	queues := map[uint16]*queue{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		n, err1 := strconv.ParseUint(k, 10, 16)
		if strings.Contains(v, "/") && err1 == nil {
			l, err := parseBottleneck(uint16(n), v)
			if err != nil {
				fmt.Fprintf(os.Stderr, "delay: bad argument %q: %v\n", a, err)
				os.Exit(2)
			}
			queues[uint16(n)] = &queue{num: uint16(n), link: l}
			continue
		}
		d, err2 := time.ParseDuration(v)
		if !ok || err1 != nil || err2 != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "delay: bad argument %q (want QUEUE=DURATION)\n", a)
			os.Exit(2)
		}
		queues[uint16(n)] = &queue{num: uint16(n), delay: d, ch: make(chan packet, defaultQueueLimit)}
	}
	return queues
}

// openNetlink is a netfilter netlink socket, bound, with a large receive buffer.
func openNetlink() int {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		fail("netlink socket", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		fail("netlink bind", err)
	}
	return fd
}

// bindQueue binds the socket to q, copying only packets' metadata, up to defaultQueueLimit
// packets held.
func bindQueue(q *queue, send func([]byte) error) {
	cmd := []byte{nfqnlCfgCmdBind, 0, 0, 0} // command, pad, pf (unused since Linux 3.8)
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, 0xffff)
	params[4] = nfqnlCopyMeta
	if q.link != nil {
		binary.BigEndian.PutUint32(params, headerCopy)
		params[4] = nfqnlCopyPacket
	}
	maxLen := make([]byte, 4)
	binary.BigEndian.PutUint32(maxLen, defaultQueueLimit)
	for _, m := range [][]byte{
		message(nfqnlMsgConfig, q.num, attr(nfqaCfgCmd, cmd)),
		message(nfqnlMsgConfig, q.num, attr(nfqaCfgParams, params)),
		message(nfqnlMsgConfig, q.num, attr(nfqaCfgQueueMax, maxLen)),
	} {
		if err := send(m); err != nil {
			fail(fmt.Sprintf("configuring queue %d", q.num), err)
		}
	}
}

// receive reads the queued packets' ids for good and hands each to its queue, stamped with its
// release time.
func receive(fd int, queues map[uint16]*queue) {
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		now := time.Now()
		if err != nil {
			if err == unix.EINTR || err == unix.ENOBUFS {
				continue
			}
			fail("netlink receive", err)
		}
		eachMessage(buf[:n], func(typ uint16, msg []byte) {
			switch {
			case typ == unix.NLMSG_ERROR && len(msg) >= 4:
				if code := int32(binary.NativeEndian.Uint32(msg[0:4])); code != 0 {
					fail("netlink", syscall.Errno(-code))
				}
			case typ == nfnlSubsysQueue<<8|nfqnlMsgPacket && len(msg) >= 4:
				qn := binary.BigEndian.Uint16(msg[2:4])
				if q := queues[qn]; q != nil && q.link != nil {
					q.link.arrive(msg[4:], now)
				} else if id, ok := packetID(msg[4:]); ok {
					if q := queues[qn]; q != nil {
						q.ch <- packet{id: id, due: now.Add(q.delay)}
					}
				}
			}
		})
	}
}

// eachMessage calls fn with each netlink message's type and payload in b. The last message of
// a read need not be padded to 4 bytes (a copied packet of odd length ends it): the walk stops
// at the end of b, never past it.
func eachMessage(b []byte, fn func(typ uint16, msg []byte)) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return
		}
		fn(binary.NativeEndian.Uint16(b[4:6]), b[unix.NLMSG_HDRLEN:l])
		b = b[min(align(l), len(b)):]
	}
}

// release accepts each packet of q when it is due, in arrival order (the delay is constant).
func release(q *queue, send func([]byte) error) {
	runtime.LockOSThread()
	for p := range q.ch {
		// nanosleep(2) on this locked thread wakes within tens of microseconds; Go's timers can
		// be a millisecond late here, more than the delays we add. Spin for the last stretch.
		if wait := time.Until(p.due); wait > spinBelow {
			ts := unix.NsecToTimespec(int64(wait - spinBelow))
			for unix.Nanosleep(&ts, &ts) == unix.EINTR {
			}
		}
		for time.Now().Before(p.due) {
		}
		v := make([]byte, 8)
		binary.BigEndian.PutUint32(v[0:4], nfAccept)
		binary.BigEndian.PutUint32(v[4:8], p.id)
		if err := send(message(nfqnlMsgVerdict, q.num, attr(nfqaVerdictHdr, v))); err != nil {
			fmt.Fprintln(os.Stderr, "delay: verdict:", err)
		}
	}
}

func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs[0:2]))
		t := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if t == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:8]), true
		}
		attrs = attrs[min(align(l), len(attrs)):]
	}
	return 0, false
}

func message(msgType uint16, queueNum uint16, payload []byte) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN+4+len(payload))
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:6], nfnlSubsysQueue<<8|msgType)
	binary.NativeEndian.PutUint16(b[6:8], unix.NLM_F_REQUEST)
	g := b[unix.NLMSG_HDRLEN:]
	g[0], g[1] = unix.AF_UNSPEC, 0 // family, NFNETLINK_V0
	binary.BigEndian.PutUint16(g[2:4], queueNum)
	copy(g[4:], payload)
	return b
}

func attr(t uint16, data []byte) []byte {
	b := make([]byte, align(4+len(data)))
	binary.NativeEndian.PutUint16(b[0:2], uint16(4+len(data)))
	binary.NativeEndian.PutUint16(b[2:4], t)
	copy(b[4:], data)
	return b
}

func align(n int) int { return (n + 3) &^ 3 }

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "delay: %s: %v\n", what, err)
	os.Exit(1)
}
