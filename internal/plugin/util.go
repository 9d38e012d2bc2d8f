package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// isAppProbe says whether a probe measures the application (its port, or its Service) rather
// than the agent server: its failure is reported next to the results, not fatal.
func isAppProbe(name string) bool {
	return strings.HasPrefix(name, "app-") || strings.HasPrefix(name, "svc-")
}
