// Package diff is `kubectl netbench diff OLD NEW`: two reports compared figure by figure.
package diff
