// Package fakecluster is the one fake cluster the command tests use: a fake clientset that
// behaves as a cluster does for a run (New: pods and ephemeral containers start at once, agents
// speak from scripts, the pod proxy is recorded; NewFleet: a DaemonSet's agents on labelled
// nodes answer jobs), with the permissions a test denies, and the fixtures of NetworkPolicy
// tests. It imports no command and no session, so their tests may import it.
package fakecluster
