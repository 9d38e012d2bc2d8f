// Package hostile holds peers that do not know a run's token and try to hold an agent's
// connection slots: the tests of the agent's bounds, on loopback and in the lab, use them.
package hostile

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Kinds are the ways a peer without the token holds a connection.
var Kinds = []struct {
	Name string
	Hold func(c net.Conn, gone <-chan struct{}) // returns once gone is closed
}{
	{"raw TCP, silent", func(c net.Conn, gone <-chan struct{}) { <-gone }},
	{"raw TCP, random bytes", junk},
	{"HTTP/1 header trickled byte by byte", trickleHTTP1},
	{"HTTP/2 endless header block", endlessHeaders},
	{"HTTP/2 CONTINUATION flood", continuationFlood},
	{"gRPC, many streams without the token", manyStreams},
}

// junk writes random bytes, 1 KiB every 10 ms, until the peer closes the connection.
func junk(c net.Conn, gone <-chan struct{}) {
	b := make([]byte, 1<<10)
	for {
		_, _ = rand.Read(b)
		if _, err := c.Write(b); err != nil {
			return
		}
		select {
		case <-gone:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func trickleHTTP1(c net.Conn, gone <-chan struct{}) {
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Long: "))
	for {
		select {
		case <-gone:
			return
		case <-time.After(100 * time.Millisecond):
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	}
}

// h2Open writes the client preface and an empty SETTINGS frame.
func h2Open(c net.Conn) *http2.Framer {
	_, _ = c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	_ = fr.WriteSettings()
	return fr
}

// endlessHeaders sends one header whose value never ends: a 15 MB value announced, sent in
// frames without END_HEADERS until the peer gives up.
func endlessHeaders(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	b := bigBlock()
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:16000]}) != nil {
		return
	}
	for off := 16000; off+16000 < len(b); off += 16000 {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteContinuation(1, false, b[off:off+16000]) != nil {
			return
		}
	}
	<-gone
}

// bigBlock is an HPACK header block with one 15 MB value, encoded once.
var bigBlock = sync.OnceValue(func() []byte {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	_ = enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 15<<20)})
	return block.Bytes()
})

// continuationFlood sends empty CONTINUATION frames as fast as the peer takes them.
func continuationFlood(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	var block bytes.Buffer
	_ = hpack.NewEncoder(&block).WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes()}) != nil {
		return
	}
	for {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteContinuation(1, false, nil) != nil {
			return
		}
	}
}

// manyStreams opens gRPC calls without the token, as many as the peer lets it.
func manyStreams(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/fgrpc.PingServer/Ping"},
		{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for id := uint32(1); id < 4000; id += 2 {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}) != nil {
			return
		}
	}
	<-gone
}

// Siege holds up to perSource connections from each source address at addr, of every kind,
// re-opening each as soon as the agent closes it (after a second, if the agent refused it on
// sight), until stop. It counts the connections opened.
func Siege(addr string, sources []string, perSource int, stop <-chan struct{}) (opened *atomic.Int64, wait func()) {
	return SiegeWith(func(src string) Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	}, addr, sources, perSource, stop)
}

// Dialer opens connections.
type Dialer interface {
	Dial(network, address string) (net.Conn, error)
}

// SiegeWith is Siege with the dialer of each source given (one in a network namespace, say).
func SiegeWith(dialer func(src string) Dialer, addr string, sources []string, perSource int, stop <-chan struct{}) (opened *atomic.Int64, wait func()) {
	opened = &atomic.Int64{}
	var wg sync.WaitGroup
	for _, src := range sources {
		for i := range perSource {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kind := Kinds[i%len(Kinds)]
				d := dialer(src)
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					opened.Add(1)
					began := time.Now()
					gone, done := make(chan struct{}), make(chan struct{})
					go func() { kind.Hold(c, gone); close(done) }()
					go func() {
						select {
						case <-stop:
							c.Close()
						case <-done:
						}
					}()
					_, _ = io.Copy(io.Discard, c) // until the agent closes it
					close(gone)
					c.Close()
					<-done
					// Re-open at once what the agent closed after holding it; back off a second
					// from one it refused on sight (a holder, not a connection-rate flood).
					if time.Since(began) < 100*time.Millisecond {
						time.Sleep(time.Second)
					}
				}
			}()
		}
	}
	return opened, wg.Wait
}
