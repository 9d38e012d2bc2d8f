package agent

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
)

// Datagrams without the token are checked at most strangersPerWindow (1000) per 100 ms: 3000
// checks in a row take at least two windows, however fast they come.
func TestStrangerBudgetBoundsDatagramChecks(t *testing.T) {
	var b strangerBudget
	start := time.Now()
	for range 3 * strangersPerWindow {
		b.spend(time.Now())
	}
	if el := time.Since(start); el < 2*strangerWindow-5*time.Millisecond {
		t.Errorf("3000 checks in %s: want at least 2 × %s at 1000 per window", el, strangerWindow)
	}
}

// The agent caps its Go heap at 96 MiB unless GOMEMLIMIT says otherwise (the plugin sets it to
// three quarters of a container memory limit).
func TestAgentMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	limitMemory()
	if got := debug.SetMemoryLimit(-1); got != 96<<20 {
		t.Errorf("memory limit %d, want 96 MiB", got)
	}
	t.Setenv("GOMEMLIMIT", "50MiB")
	debug.SetMemoryLimit(50 << 20)
	limitMemory()
	if got := debug.SetMemoryLimit(-1); got != 50<<20 {
		t.Errorf("memory limit %d with GOMEMLIMIT=50MiB, want it kept", got)
	}
}
