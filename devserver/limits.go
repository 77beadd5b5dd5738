package devserver

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// What the port holds of its clients (docs/dev-server.md): a client that opens connections and
// sends nothing, or sends a request's head and then trickles its body, is cut off; past
// maxConns open connections, new ones wait in the system's queue until one closes. Answers are
// never limited in time: a live stream lasts as long as its job.
const (
	// defaultMaxConns is the most connections the port serves at once: a job's live stream
	// holds one, a harness's SDK a few, an idle keep-alive one until idleTimeout.
	defaultMaxConns = 1024
	// defaultBodyTimeout is how long a request's body may take to arrive, from its head on
	// (the gateway's clock starts once its body has room; gateway.Config.BodyReadTimeout).
	defaultBodyTimeout = 30 * time.Second
	// headerTimeout is how long a request's head may take to arrive.
	headerTimeout = 10 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its next request.
	idleTimeout = 2 * time.Minute
)

// portLimits are the limits of the port; zero fields are the defaults. Tests make them small.
type portLimits struct {
	maxConns    int
	bodyTimeout time.Duration
}

func (l portLimits) withDefaults() portLimits {
	if l.maxConns <= 0 {
		l.maxConns = defaultMaxConns
	}
	if l.bodyTimeout <= 0 {
		l.bodyTimeout = defaultBodyTimeout
	}
	return l
}

// countedListener counts the port's open connections around the limit's listener, and says once
// in the log when they reach the limit. It counts where the limit does, at accept and close: the
// server's ConnState hook hears of a close only after the limit has let the next connection in,
// so a count kept there could read one over the limit.
//
// When the port is full, the connections that wait idle between requests (kept alive) are
// closed: a client that held the port's connections by sending a request on each now and then
// (a hostile harness, on the same loopback) would otherwise lock out the API and the UI until
// idleTimeout. Clients open a new connection for their next request, as after any idle close.
type countedListener struct {
	net.Listener
	log  *slog.Logger
	max  int
	mu   sync.Mutex
	open int
	peak int
	said bool
	idle map[net.Conn]struct{} // open connections waiting for their next request
}

func (l *countedListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	full := l.open >= l.max
	say := full && !l.said
	l.said = l.said || full
	var idle []net.Conn
	if full {
		for c := range l.idle {
			idle = append(idle, c)
		}
		clear(l.idle)
	}
	l.mu.Unlock()
	if say {
		l.log.Warn("the port has as many connections open as it serves at once; idle ones are closed, new ones wait until one closes",
			"max_connections", l.max)
	}
	for _, c := range idle {
		c.Close()
	}
	return &countedConn{Conn: conn, l: l}, nil
}

// connState keeps the set of idle connections (http.Server.ConnState); one that goes idle while
// the port is full is closed then (no accept comes to close it while the port is full).
func (l *countedListener) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if st != http.StateIdle {
		delete(l.idle, c)
		l.mu.Unlock()
		return
	}
	full := l.open >= l.max
	if !full {
		if l.idle == nil {
			l.idle = map[net.Conn]struct{}{}
		}
		l.idle[c] = struct{}{}
	}
	l.mu.Unlock()
	if full {
		c.Close()
	}
}

func (l *countedListener) now() (open, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.peak
}

// countedConn leaves the count before its close frees the limit's place.
type countedConn struct {
	net.Conn
	l    *countedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// selfListener is an in-memory listener for the dev server's calls to itself (the gateway's calls
// to the fake model): they take none of the port's connections, so the port's limit cannot leave
// a model call waiting for a connection to the fake that only its own end would free.
type selfListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newSelfListener(addr net.Addr) *selfListener {
	return &selfListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *selfListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *selfListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *selfListener) Addr() net.Addr { return l.addr }

// dial connects to the server that serves l.
func (l *selfListener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, net.ErrClosed
}

// dialSelf makes dial reach l for the port's own address, and the network for any other.
func (l *selfListener) dialSelf(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	self := l.addr.String()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == self {
			return l.dial(ctx)
		}
		return dial(ctx, network, addr)
	}
}
