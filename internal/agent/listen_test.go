package agent

import (
	"net"
	"strconv"
	"testing"
)

// A server given both loopback addresses accepts on each at one port, picked by the first.
func TestListenAllFamilies(t *testing.T) {
	ln, note, err := listenAll(":0", []string{"127.0.0.1", "", "::1"})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	if note != "" {
		t.Errorf("note %q", note)
	}
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
	if _, _, err := listenAll(":0", []string{"nope"}); err == nil {
		t.Error("--ip nope accepted")
	}
	// An address besides the primary that no interface holds yet (a new pod's tentative IPv6
	// address) is bound all the same (freebind); the primary must be held.
	ln2, note, err := listenAll(":0", []string{"127.0.0.1", "2001:db8::1"})
	if err != nil || note != "" {
		t.Errorf("a second address not held yet: %v, note %q", err, note)
	} else {
		ln2.Close()
	}
	if _, _, err := listenAll(":0", []string{"192.0.2.1", "127.0.0.1"}); err == nil {
		t.Error("an unusable primary address accepted")
	}
	ln.Close()
	if _, err := ln.Accept(); err == nil {
		t.Error("accept after close")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
