package dnsname

import (
	"strings"
	"testing"
)

// Names come from the command line: any input gives a valid ASCII name or an error, never a
// panic, and no control character reaches the output.
func FuzzCheckDNSName(f *testing.F) {
	for _, s := range []string{"example.com", "bücher.example.", "a..b", strings.Repeat("a", 64) + ".com", "a\x1b[31m.com", "xn--.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ascii, _, err := Check(name)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x1b\r") {
				t.Errorf("error carries control characters: %q", err)
			}
			return
		}
		if err := checkASCII(ascii); err != nil || !isASCII(ascii) || len(strings.TrimSuffix(ascii, ".")) > 253 {
			t.Errorf("%q accepted as %q, which is not a valid ASCII name (%v)", name, ascii, err)
		}
	})
}
