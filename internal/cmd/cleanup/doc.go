// Package cleanup is `kubectl netbench cleanup`: what a killed run left, deleted.
package cleanup
