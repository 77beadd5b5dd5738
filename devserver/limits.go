package devserver

import (
	"container/list"
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
	// defaultMaxIdlePerAddr is the most idle connections (waiting for a request, their first
	// included) one client address keeps open; past it, its connection idle the longest is
	// closed. An honest client sends its request as soon as it connects and keeps a few idle
	// ones for the next; every local client shares 127.0.0.1, so this is far above what a
	// developer's clients hold together, and a quarter of the port.
	defaultMaxIdlePerAddr = 256
	// defaultBodyTimeout is how long a request's body may take to arrive, from its head on
	// (the gateway's clock starts once its body has room; gateway.Config.BodyReadTimeout).
	defaultBodyTimeout = 30 * time.Second
	// defaultHeaderTimeout is how long a request's head may take to arrive.
	defaultHeaderTimeout = 10 * time.Second
	// idleTimeout is how long a kept-alive connection may wait for its next request.
	idleTimeout = 2 * time.Minute
)

// portLimits are the limits of the port; zero fields are the defaults. Tests make them small.
type portLimits struct {
	maxConns       int
	maxIdlePerAddr int
	bodyTimeout    time.Duration
	headerTimeout  time.Duration
}

func (l portLimits) withDefaults() portLimits {
	if l.maxConns <= 0 {
		l.maxConns = defaultMaxConns
	}
	if l.maxIdlePerAddr <= 0 {
		l.maxIdlePerAddr = min(defaultMaxIdlePerAddr, max(1, l.maxConns/4))
	}
	if l.bodyTimeout <= 0 {
		l.bodyTimeout = defaultBodyTimeout
	}
	if l.headerTimeout <= 0 {
		l.headerTimeout = defaultHeaderTimeout
	}
	return l
}

// newGrace is how long a connection just accepted has to send its request's head before it may
// be closed to make way (an honest client sends it at once; scheduling on a loaded machine can
// hold it back a little). A flood that connects again as soon as it is closed holds its
// connections that long at least, so new requests may wait that long when it fills the port.
const newGrace = 100 * time.Millisecond

// countedListener is the port's listener: it serves at most max connections at once (past that,
// Accept waits until one closes), counts them, and says once in the log when they reach the
// limit.
//
// Idle connections give way, those idle the longest first. A connection is idle from its accept
// until its request's head has come, and again between requests (kept alive): the server waits
// for the client. That is what tells a flood from honest use: an honest client sends its request
// at once, a flood holds connections that send nothing (or a request now and then) and, closed,
// connects again. So one client address keeps at most maxIdle idle connections (past that, its
// oldest idle one is closed), and when the port is full its oldest idle connection, whoever's,
// is closed for the new one: new requests are served, never left waiting for a held
// connection's header timeout. A connection busy with a request (a live stream, a model call),
// one whose request has come and waits to be read, and one accepted less than newGrace ago are
// never closed. Clients open a new connection for their next request, as after any idle close.
type countedListener struct {
	net.Listener
	log     *slog.Logger
	max     int // connections open at once
	maxIdle int // idle connections of one client address

	slots     chan struct{} // one for each open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu      sync.Mutex
	open    int
	peak    int
	said    bool
	saidCap bool
	idle    map[net.Conn]*list.Element // the idle connections, in their address's list
	byAddr  map[string]*list.List      // each address's idle connections, idle the longest first
}

func newCountedListener(ln net.Listener, log *slog.Logger, limits portLimits) *countedListener {
	return &countedListener{Listener: ln, log: log, max: limits.maxConns, maxIdle: limits.maxIdlePerAddr,
		slots: make(chan struct{}, limits.maxConns), done: make(chan struct{}),
		idle: map[net.Conn]*list.Element{}, byAddr: map[string]*list.List{}}
}

// idleConn is an idle connection, in its address's list.
type idleConn struct {
	conn  *countedConn
	addr  string
	since time.Time
	fresh bool // not yet a request on it
}

func (l *countedListener) Accept() (net.Conn, error) {
	for waiting := false; ; waiting = true {
		if waiting {
			// The port is full and nothing could make way when it filled (its idle connections
			// were all just accepted): try again once they are older.
			l.mu.Lock()
			evict, say, sayCap := l.makeWay(nil, nil)
			l.mu.Unlock()
			l.close(evict, say, sayCap)
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		case <-time.After(newGrace):
			continue
		}
		break
	}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	c := &countedConn{Conn: conn, l: l}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.goIdle(c, true)
	evict, say, sayCap := l.makeWay(c, c)
	l.mu.Unlock()
	l.close(evict, say, sayCap)
	return c, nil
}

func (l *countedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// goIdle puts c at the end of its address's idle connections. l.mu is held.
func (l *countedListener) goIdle(c *countedConn, fresh bool) {
	if _, ok := l.idle[c]; ok {
		return
	}
	addr := remoteHost(c)
	q := l.byAddr[addr]
	if q == nil {
		q = list.New()
		l.byAddr[addr] = q
	}
	l.idle[c] = q.PushBack(&idleConn{conn: c, addr: addr, since: time.Now(), fresh: fresh})
}

// busy takes c out of the idle connections. l.mu is held.
func (l *countedListener) busy(c net.Conn) {
	e, ok := l.idle[c]
	if !ok {
		return
	}
	delete(l.idle, c)
	ic := e.Value.(*idleConn)
	q := l.byAddr[ic.addr]
	q.Remove(e)
	if q.Len() == 0 {
		delete(l.byAddr, ic.addr)
	}
}

// makeWay picks the idle connections to close now that c is idle: the oldest of its address past
// maxIdle, and, when the port is full, the oldest idle one of all but but (a connection just
// accepted, what way is made for; one gone idle on a full port may make way itself). l.mu is
// held.
func (l *countedListener) makeWay(c, but *countedConn) (evict []*countedConn, say, sayCap bool) {
	now := time.Now()
	var q *list.List
	if c != nil { // nil: the port is full, for no connection in particular (Accept waits)
		q = l.byAddr[remoteHost(c)]
	}
	if q != nil && q.Len() > l.maxIdle {
		if ic := oldestEvictable(q, now, nil); ic != nil {
			evict = append(evict, ic.conn)
			l.busy(ic.conn)
			sayCap, l.saidCap = !l.saidCap, true
		}
	}
	if l.open-len(evict) >= l.max {
		var oldest *idleConn
		for _, q := range l.byAddr {
			if ic := oldestEvictable(q, now, but); ic != nil && (oldest == nil || ic.since.Before(oldest.since)) {
				oldest = ic
			}
		}
		if oldest != nil {
			evict = append(evict, oldest.conn)
			l.busy(oldest.conn)
		}
		say, l.said = !l.said, true
	}
	return evict, say, sayCap
}

// oldestEvictable is the connection of q idle the longest that may be closed: not but, not one
// accepted within newGrace, not one whose request has come and waits to be read.
func oldestEvictable(q *list.List, now time.Time, but *countedConn) *idleConn {
	for e := q.Front(); e != nil; e = e.Next() {
		ic := e.Value.(*idleConn)
		if ic.conn == but {
			continue
		}
		if ic.fresh && now.Sub(ic.since) < newGrace {
			return nil // and every one after it is younger
		}
		if unread(ic.conn.Conn) {
			continue
		}
		return ic
	}
	return nil
}

func (l *countedListener) close(evict []*countedConn, say, sayCap bool) {
	if say {
		l.log.Warn("the port has as many connections open as it serves at once; the idle ones are closed, those idle the longest first",
			"max_connections", l.max)
	}
	if sayCap {
		l.log.Warn("a client holds more idle connections than one client may; its idle ones are closed, those idle the longest first",
			"max_idle_per_address", l.maxIdle)
	}
	for _, c := range evict {
		c.Close()
	}
}

// connState keeps the idle connections (http.Server.ConnState): a connection that waits for its
// next request is idle again, and may make way as a new one does (itself too, on a full port).
func (l *countedListener) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*countedConn)
	if !ok {
		return
	}
	var evict []*countedConn
	var say, sayCap bool
	l.mu.Lock()
	switch st {
	case http.StateNew: // idle since its accept
	case http.StateIdle:
		l.goIdle(c, false)
		evict, say, sayCap = l.makeWay(c, nil)
	default:
		l.busy(c)
	}
	l.mu.Unlock()
	l.close(evict, say, sayCap)
}

// remoteHost is the address a connection comes from, without its port.
func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

func (l *countedListener) now() (open, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.peak
}

// countedConn leaves the count and the idle connections, and gives its place back, once closed.
type countedConn struct {
	net.Conn
	l    *countedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.busy(c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
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
