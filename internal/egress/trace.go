package egress

import (
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"time"
)

// phases are the moments of one request, as httptrace reports them. Of several connection
// attempts (an address family racing the other, or given up on), the connection phase runs from
// the first one's start to the end of the one that succeeded.
type phases struct {
	dnsStart, dnsDone         time.Time
	connectStart, connectDone time.Time
	tlsStart, tlsDone         time.Time
	firstByte                 time.Time
	addrs                     []string
	remote                    string
	reused                    bool
	mu                        sync.Mutex // attempts race each other (Happy Eyeballs)
}

func (p *phases) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(httptrace.DNSStartInfo) { p.dnsStart = time.Now() },
		DNSDone: func(i httptrace.DNSDoneInfo) {
			p.dnsDone = time.Now()
			for _, a := range i.Addrs {
				p.addrs = append(p.addrs, a.IP.String())
			}
		},
		ConnectStart: func(string, string) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.connectStart.IsZero() {
				p.connectStart = time.Now()
			}
		},
		ConnectDone: func(_, _ string, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err == nil && p.connectDone.IsZero() {
				p.connectDone = time.Now()
			}
		},
		TLSHandshakeStart: func() { p.tlsStart = time.Now() },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { p.tlsDone = time.Now() },
		GotConn: func(i httptrace.GotConnInfo) {
			p.reused = i.Reused
			p.remote = i.Conn.RemoteAddr().String()
		},
		GotFirstResponseByte: func() { p.firstByte = time.Now() },
	}
}
