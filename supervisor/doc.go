// Package supervisor is the node side of the oz0 harness protocol: it starts a plugin's harness
// as a session (its command, environment and sandbox), speaks the protocol with it (package
// harnesskit's messages and codec), decides the session's end, and cleans up after it (the
// session's processes, its directory, and what a node that died left behind: ReapStale).
//
// A node runs a session like this:
//
//	s, err := supervisor.Start(ctx, supervisor.Spec{
//		Command:   []string{"python", "-m", "acme_triage"},
//		PluginDir: dir,
//		Request:   harnesskit.SessionRequest{Job: job, Agent: "acme-triage", Harness: "acme-triage", Text: text, ...},
//		Env:       supervisor.Env{AnthropicBaseURL: gateway + "/anthropic", AnthropicAPIKey: sessionKey, ...},
//		Limits:    supervisor.Limits{Timeout: 10 * time.Minute},
//		Decider:   hooks, // permission requests of listed tools
//		Sink:      trace.Append,
//	})
//	if err != nil { ... } // nothing started, nothing left behind
//	end := s.Wait()       // Completed, Failed, Cancelled, TimedOut or ProtocolViolation, and why
//
// The supervisor's decisions, beyond docs/protocol.md:
//
//   - The supervisor owns the pipes (os.Pipe handed to the child as files), so exec.Cmd.Wait never
//     waits on I/O; when the harness exits, what is left of its process group is killed at once
//     and the readers drain the pipes, giving up on one that stays silent for the grace period
//     (only a process that left the group can still hold it), but never before reading what it
//     holds: a reader that first runs late, on a loaded machine, still gets the harness's last
//     lines.
//   - Each end is decided once, by the first of: the harness's result or error, a protocol
//     violation, the timeout, cancellation, the process's exit (after stdout is drained), or stdout
//     closed without a last line for the grace period. Session.Cancel decides the end before it
//     returns, so a line not yet read when it is called (a result too) comes after the end.
//   - Events go to the sink one at a time, in order, from the goroutine that saw them; a slow sink
//     slows the harness (its writes block) and loses nothing. The sink is never called after Wait
//     returns, and EventEnd is the last call.
//   - Permission requests of listed tools go to the Decider, each in its own goroutine, so several
//     may be open (up to MaxOpenPermissions). Its context ends with the session; Wait waits for
//     every Decide call.
//   - stdout is bounded: its bytes by the event budget (Limits), a say or log longer than the read
//     buffer read in pieces, and any other long line (a tool's result, a call's arguments) read
//     whole, taken from the reader, decoded into slices of it, and handed on in its place among
//     the node's long lines (Spec.LongLines), so that a node's memory does not grow with its
//     sessions.
//   - A line that breaks a rule ends the session as a ProtocolViolation and is an EventViolation
//     where it came: a key twice in its object (it is no message), a tool_result for a call that
//     was never asked, not allowed, or of another tool; none of it is acted on.
//   - stderr is bounded: see StderrTailSize and StderrRate.
//   - Spec.Sandbox runs the session in the sandbox of its tier (package sandbox, docs/sandbox.md).
//     The process the supervisor starts, waits for and signals is then the session's init (oz0
//     re-executed, PID 1 of the session's namespaces): it starts the harness, passes SIGTERM on to
//     every process of the session, reports the harness's exit status, and when it exits the
//     kernel ends every process left in the session. Without a sandbox, what still holds the
//     session's pipes once its process group is killed is found (on Linux) and killed too.
//   - A session's directory is named after the node that made it (pid and start time) and records
//     the session's process group and its leader's start time, so that ReapStale can clean up
//     after a node that died without doing it.
package supervisor
