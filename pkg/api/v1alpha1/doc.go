// Package v1alpha1 is the stable, versioned schema of the reports kubectl-netbench writes with
// -o json and -o yaml (apiVersion netbench.kubectl.dev/v1alpha1): PathReport, LadderReport,
// DNSReport, MatrixReport and DiffReport, every type they contain, and Read, which decodes a
// report written as JSON. Tools that read netbench's output may import it; it imports nothing
// but the standard library.
//
// Fields are only ever added within a version; a change that removes or renames one bumps
// the apiVersion (and the package). docs/output.md describes every field.
//
// This is the project's only public package: everything else (the measuring, the commands,
// the analysis and rendering of reports) is internal and may change in any release.
package v1alpha1
