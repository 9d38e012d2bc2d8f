// Package text makes what an application, a peer or the cluster says safe to print, and joins
// host and port the way every command prints an address.
package text

import (
	"net"
	"strconv"
	"strings"
	"unicode"
)

// Clean drops control characters (terminal escapes among them) from text the measured
// application, a peer or the cluster controls, so it cannot rewrite the terminal; tabs become
// spaces.
func Clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
}

// Sanitize makes text an application or a peer controls safe to print on one line.
func Sanitize(s string) string { return Clean(strings.ReplaceAll(s, "\n", " ")) }

// JoinHostPort is net.JoinHostPort with a numeric port.
func JoinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// Unique is s without repeats, in the order of their first appearance.
func Unique(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
