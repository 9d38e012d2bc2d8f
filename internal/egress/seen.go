package egress

import (
	"bytes"
	"encoding/json"
	"net/netip"
)

// maxSeen is how much of an answer is kept to read an echoed address from.
const maxSeen = 256

// prefix is an io.Writer that keeps the first maxSeen bytes written to it, and counts them all.
type prefix struct {
	b []byte
	n int
}

func (p *prefix) Write(b []byte) (int, error) {
	if room := maxSeen - len(p.b); room > 0 {
		p.b = append(p.b, b[:min(room, len(b))]...)
	}
	p.n += len(b)
	return len(b), nil
}

// whole is what was written when it was all kept; nil when there was more.
func (p *prefix) whole() []byte {
	if p.n > len(p.b) {
		return nil
	}
	return p.b
}

// seenAddress is the address an answer echoes when it is nothing else: plain text (as
// checkip-style services answer), or a JSON object whose "ip" or "origin" is an address (as
// httpbin's /ip answers); "" otherwise.
func seenAddress(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || len(body) >= maxSeen {
		return ""
	}
	if body[0] == '{' {
		var v struct{ IP, Origin string }
		if json.Unmarshal(body, &v) != nil || (v.IP == "") == (v.Origin == "") {
			return "" // not JSON, or not one of the two keys
		}
		body = []byte(v.IP + v.Origin)
	}
	a, err := netip.ParseAddr(string(body))
	if err != nil || a.Zone() != "" {
		return ""
	}
	return a.Unmap().String()
}
