package agent

import (
	"net"
	"strconv"
	"testing"
)

// A server given both loopback addresses accepts on each at one port, picked by the first.
func TestListenAllFamilies(t *testing.T) {
	ln, err := listenAll(":0", []string{"127.0.0.1", "", "::1"})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	for _, host := range []string{"127.0.0.1", "::1"} {
		c, err := net.Dial("tcp", net.JoinHostPort(host, itoa(port)))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.LocalAddr().(*net.TCPAddr).IP.String(); got != host {
			t.Errorf("accepted on %s, want %s", got, host)
		}
		c.Close()
		s.Close()
	}
	if _, err := listenAll(":0", []string{"nope"}); err == nil {
		t.Error("--ip nope accepted")
	}
	ln.Close()
	if _, err := ln.Accept(); err == nil {
		t.Error("accept after close")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
