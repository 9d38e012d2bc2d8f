package plugin

import (
	"net"
	"strconv"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// sanitize makes text an application or a peer controls safe to print on one line.
func sanitize(s string) string { return report.Clean(strings.ReplaceAll(s, "\n", " ")) }

func joinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
