// Package session is the agent runtime of one run: the agents it starts in the cluster, what they
// say, and the guarantee that nothing of the run outlives it. It depends only on a clientset,
// the wire types of internal/agent and internal/access; no command and no report.
//
// A run opens one Session (NewSession), starts agents on it and closes it once:
//
//	s := session.NewSession(client, runID, token, image, session.ModeEphemeral, timeout)
//	defer s.Close()                        // every agent ended, every temporary object deleted
//	srv, err := s.StartReady(ctx, spec, "the server agent") // Start, the ready event, the job
//	err = cli.Follow(ctx, func(ev agent.Event) (bool, error) { ... }) // the agent's events
//	err = s.Release(ctx, srv)               // stop one agent early
//
// An agent joins a pod as an ephemeral container (ModeEphemeral) or runs in a temporary pod
// of its own (ModePod), with a restricted security context and a lifetime after which it ends
// by itself; server agents also end when the run stops renewing their lease (LeasePeriod).
// StartFleet starts a matrix's agents as a DaemonSet whose members renew their leases and run
// jobs through the pod proxy (Fleet.Run). CreatePolicy and CreateService make the run's
// temporary NetworkPolicies and Services, labelled with the run and annotated with the time
// after which anyone may delete them; Close deletes them after the agents.
package session
