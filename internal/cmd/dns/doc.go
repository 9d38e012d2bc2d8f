// Package dns is `kubectl netbench dns TARGET`: what one lookup from a pod really sends, its
// latency and the fix.
package dns
