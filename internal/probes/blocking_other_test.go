//go:build !linux

package probes

import "testing"

// waitForNoWaiters: no socket is ever detached here.
func waitForNoWaiters(*testing.T) {}
