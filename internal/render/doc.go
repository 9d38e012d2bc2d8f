// Package render writes the reports of internal/report for people (tables, a terminal
// histogram, the ladder's and the matrix's HTML pages) and machines (JSON and YAML with
// non-finite numbers marked, OpenMetrics, JUnit). It computes nothing a report does not hold;
// testdata holds a JSON report of each kind and its golden human rendering.
package render
