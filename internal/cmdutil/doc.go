// Package cmdutil is what the commands share: kubectl's flags and the options every command
// has (CommonOptions), the runner that owns the sequence of a run (Command, Execute), targets
// resolved to running pods, --fail-if gates, the choice of mode, NetworkPolicy planning (which
// probes a policy blocks, the temporary policies of --allow-policy) and the stale objects of
// killed runs.
package cmdutil
