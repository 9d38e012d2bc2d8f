// Package dnsname checks DNS names given on the command line as a resolver would, and converts
// internationalized names to the punycode form that goes on the wire.
package dnsname

import (
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"golang.org/x/net/idna"
)

// Check validates a name as a resolver would: at most 253 characters, labels of 1 to
// 63 letters, digits, hyphens or underscores, an optional trailing dot. A name with non-ASCII
// letters (an IDN) is converted to its punycode form, which is what goes on the wire; note says so.
func Check(name string) (ascii, note string, err error) {
	ascii = name
	if !isASCII(name) {
		ascii, err = idna.Lookup.ToASCII(strings.TrimSuffix(name, "."))
		if err != nil {
			return "", "", fmt.Errorf("name %q is not a valid internationalized domain name: %w", name, err)
		}
		if strings.HasSuffix(name, ".") {
			ascii += "."
		}
		note = fmt.Sprintf("name %q is looked up as %q (punycode, as resolvers send it)", name, ascii)
	}
	if err := checkASCII(ascii); err != nil {
		return "", "", fmt.Errorf("name %q is not a DNS name: %w", name, err)
	}
	return ascii, note, nil
}

// CheckFlag checks a DNS name given in the flag named flag.
func CheckFlag(name, flag string) error {
	if err := checkASCII(name); err != nil {
		return fmt.Errorf("%s %q is not a DNS name: %w", flag, name, err)
	}
	return nil
}

func checkASCII(name string) error {
	trimmed := strings.TrimSuffix(name, ".")
	switch {
	case trimmed == "":
		return fmt.Errorf("empty")
	case len(trimmed) > 253:
		return fmt.Errorf("%d characters, more than 253", len(trimmed))
	}
	for _, label := range strings.Split(trimmed, ".") {
		if label == "" {
			return fmt.Errorf("an empty label")
		}
		if len(label) > 63 {
			return fmt.Errorf("label %q has %d characters, more than 63", label[:20]+"…", len(label))
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("label %q holds %q: only letters, digits, '-' and '_'", text.Sanitize(label), r)
			}
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
