// Package policyplan plans a run around the cluster's NetworkPolicies before anything is
// created: which probes a policy would block and which port the agents can use instead (Scope,
// PlanPath), and for --allow-policy the temporary policies that open only the run's own flows
// and select only pods the existing policies already isolate (Allowance, Opening, Scope.Create).
// What the API allows between two endpoints is internal/netpolicy's.
package policyplan
