//go:build !linux

package agent

import "syscall"

// freebind does nothing where the agent never runs (it runs in Linux pods).
func freebind(string, string, syscall.RawConn) error { return nil }
