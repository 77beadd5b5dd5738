package hook

import (
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Serve serves h as an oz0 hook plugin: it answers the host's handshake on stdout and decides
// calls until the host closes the plugin, then returns. Call it from main. Run by hand, without
// the host's magic cookie in the environment, the program says that it is a plugin and exits
// with status 1.
//
// Anything the hook writes to stderr (os.Stderr, the log package) reaches the host, which keeps
// it in its log and quotes the last line when the plugin fails. (Serve sets os.Stderr before the
// first call; a goroutine of the plugin's own that reads os.Stderr at that moment races with it.) The plugin exits by itself when its host
// is gone.
func Serve(h Hook) {
	if os.Getenv(MagicCookieKey) == MagicCookieValue {
		go exitWithParent(os.Getppid(), time.Second)
	}
	// go-plugin points os.Stderr at a pipe that it streams to the host over gRPC, which loses
	// what a plugin writes just before it exits. Before the first call, os.Stderr is the real
	// stderr again: the host reads it directly, to the last line.
	stderr := os.Stderr
	var once sync.Once
	restore := func() { once.Do(func() { os.Stderr = stderr }) }
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &Plugin{Impl: h, restore: restore}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "hook",
			Level:      hclog.Warn,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}

// exitWithParent exits when the process's parent changes (the host died without closing the
// plugin, and the plugin was handed to another parent).
func exitWithParent(ppid int, every time.Duration) {
	if ppid <= 1 {
		return
	}
	for range time.Tick(every) {
		if os.Getppid() != ppid {
			os.Exit(0)
		}
	}
}
