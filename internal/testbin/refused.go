package testbin

import (
	"net"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// RefusedAddr is a loopback address (HOST:PORT) where a connection is refused for as long as the
// test runs: a socket bound there that does not listen. A listener closed at once would leave its
// port free for the next one a parallel test opens, which then answers.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(fd)
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
}
