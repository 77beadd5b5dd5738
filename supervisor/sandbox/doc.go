// Package sandbox is the sandbox of a node's tier (docs/sandbox.md): none, standard (user, mount,
// PID, IPC and UTS namespaces) and strict (standard and a network namespace where only the gateway
// is reachable). The supervisor runs a session in it when its Spec asks; Check says
// whether a tier works on this machine, and why not, and Resolve picks the default.
//
// Decisions a reader would otherwise reverse-engineer:
//
//   - Linux's namespaces through Go's SysProcAttr and oz0 itself, re-executed as the session's
//     init (internal/initproc), rather than bubblewrap: no program to install, the same code on
//     every machine. The init runs from a package init function, before main and before oz0's
//     heavy packages are initialised.
//   - The session's root is an allow-list: a new read-only tmpfs with the system's directories,
//     the plugin and the program's installation bound read-only, the session's directories
//     read-write, a private /tmp, /dev and /proc, entered with pivot_root and the host's tree
//     detached. Paths keep their host names, so the request's paths and the resolved argv mean the
//     same inside. What must stay unseen where something shown holds it (the node's state in the
//     plugin's .oz0/dev) is covered by an empty filesystem.
//   - A plugin's links are its author's: a linked .venv, node_modules or harness program is shown
//     where it leads only when it is what it claims (a virtual environment, a directory named
//     node_modules, an interpreter in a bin directory), and never when it leads to a directory of
//     the host's own (offLimits). A refused link fails the session's start (LinkError) rather than
//     be dropped, which would fail later with a module that cannot be found.
//   - Ids: the node's user is the harness's, inside and out; a node that is root in the host's
//     user namespace runs the harness as nobody, so that root's files are not the harness's. An
//     unprivileged init gets the capabilities it needs as ambient ones; before the harness starts
//     it sets no_new_privs, clears the ambient set and empties the bounding set, and is itself
//     not dumpable.
//   - The init is PID 1: it reaps, passes SIGTERM on to every process of the session, and exits
//     when the harness does, reporting its wait status over the control socket; the kernel then
//     ends everything else in the namespace. It dies with the node (a parent-death signal, and the
//     end of the control socket).
//   - Starting an init (the namespaces, oz0's exec, Go's runtime) is most of what a sandbox costs
//     a session's start, so each tier keeps one started ahead, waiting for its config and the
//     harness's pipes (SCM_RIGHTS); it is started when a session ends, so that it does not share
//     the CPU with a harness starting.
//   - Strict: the init brings up loopback in the session's network and listens there on the
//     gateway's address; it sends the listening socket to the node (SCM_RIGHTS), which serves the
//     gateway on it directly. Nothing forwards bytes.
package sandbox
