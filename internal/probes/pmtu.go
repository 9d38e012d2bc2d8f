package probes

import "github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"

// PMTUResult is v1alpha1.PMTUResult, a type of the reports' schema.
type PMTUResult = v1alpha1.PMTUResult
