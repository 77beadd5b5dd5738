package sandbox

// The node and a session's init talk over a SOCK_SEQPACKET socket pair, the init's end its fd 3:
// one JSON message each way per packet.

// initArg0 is the init's argv[0]: how a re-executed oz0 knows it is a session's init (and what ps
// shows for it).
const initArg0 = "oz0-sandbox-init"

// initConfig is the node's one message to the init.
type initConfig struct {
	Argv   []string `json:"argv,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Root   string   `json:"root"`
	Ops    []op     `json:"ops"`
	Net    bool     `json:"net,omitempty"`    // a network namespace of its own: bring up loopback
	Listen []string `json:"listen,omitempty"` // and listen there for the gateway
	UID    int      `json:"uid"`              // the harness's ids; -1 keeps the init's
	GID    int      `json:"gid"`
	// Probe: build the sandbox, say so, and exit without running anything.
	Probe bool `json:"probe,omitempty"`
}

// initReply is one of the init's messages: an error (nothing runs), ready (the harness runs; the
// listening sockets of Listen come with it, in that order), or the harness's exit.
type initReply struct {
	Error string  `json:"error,omitempty"`
	Ready bool    `json:"ready,omitempty"`
	PID   int     `json:"pid,omitempty"`
	Exit  *uint32 `json:"exit,omitempty"` // a wait status
}

// maxMessage bounds a message's size (the init's config is a few KiB: the env and the steps).
const maxMessage = 1 << 20
