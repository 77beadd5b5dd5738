// Package initproc is a sandboxed session's init: oz0 itself, re-executed by the node in the
// session's namespaces (see sandbox.Process), which builds the session's root, starts the
// harness, and stays its PID 1. It runs from this package's init function, before main: see
// init_linux.go for why. This file is how the node and the init talk, over a SOCK_SEQPACKET
// socket pair whose init's end is its fd 3: one JSON message each way per packet.
package initproc

// Arg0 is the init's argv[0]: how a re-executed oz0 knows it is a session's init (and what ps
// shows for it).
const Arg0 = "oz0-sandbox-init"

// ControlFD is the init's end of its control socket.
const ControlFD = 3

// Config is the node's one message to the init; the harness's stdin, stdout and stderr come
// with it (SCM_RIGHTS), as the init is started before its session.
type Config struct {
	Argv   []string `json:"argv,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Root   string   `json:"root"`
	Ops    []Op     `json:"ops"`
	Net    bool     `json:"net,omitempty"`    // a network namespace of its own: bring up loopback
	Listen []string `json:"listen,omitempty"` // and listen there (IP:port) for the gateway
	UID    int      `json:"uid"`              // the harness's ids; -1 keeps the init's
	GID    int      `json:"gid"`
	// Probe: build the sandbox, say so, and exit without running anything.
	Probe bool `json:"probe,omitempty"`
}

// Reply is one of the init's messages: an error (nothing runs), ready (the harness runs; the
// listening sockets of Listen come with it, in that order), or the harness's exit.
type Reply struct {
	Error string `json:"error,omitempty"`
	Exec  bool   `json:"exec,omitempty"` // the Error is the harness's exec failing: the sandbox was built
	// Denied is an exec refused for permission (EACCES): the node says which part of the path,
	// from outside, where the files' owners are as the host has them (not so in the sandbox).
	Denied bool    `json:"denied,omitempty"`
	Ready  bool    `json:"ready,omitempty"`
	PID    int     `json:"pid,omitempty"`
	Exit   *uint32 `json:"exit,omitempty"` // a wait status
}

// MaxMessage bounds a message's size (the init's config is a few KiB: the env and the steps).
const MaxMessage = 1 << 20

// Op is one step of building the session's root, done by the init in order.
type Op struct {
	Kind string `json:"k"` // see the constants below
	Src  string `json:"s,omitempty"`
	Dst  string `json:"d"`
	// Optional: a missing Src is skipped, not an error (it went between planning and mounting).
	Optional bool `json:"o,omitempty"`
}

// The kinds of Op.
const (
	OpSymlink = "symlink" // Dst is a symlink to Src, as on the host (/bin -> usr/bin)
	OpRO      = "ro"      // Src bound on Dst read-only, nosuid, nodev
	OpRW      = "rw"      // Src bound on Dst read-write, nosuid, nodev
	OpDevice  = "dev"     // a device node bound on Dst (/dev/null ...)
	OpTmpfs   = "tmpfs"   // a new tmpfs on Dst, mode 1777
	OpDevfs   = "devfs"   // a new tmpfs on Dst, mode 0755, for /dev
	OpHide    = "hide"    // an empty read-only filesystem over Dst (or /dev/null over a file)
	OpProc    = "proc"    // the PID namespace's procfs on Dst
)
