//go:build linux

package initproc

import (
	"strings"
	"syscall"
	"testing"
)

func TestUnescapeMountPath(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{name: "plain", in: "/tmp/box/usr", want: "/tmp/box/usr"},
		{name: "space", in: `/tmp/box/ro\040dir`, want: "/tmp/box/ro dir"},
		{name: "tab newline backslash", in: `/a\011b\012c\134d`, want: "/a\tb\nc\\d"},
		{name: "not an octal escape", in: `/a\9xyz`, want: `/a\9xyz`},
		{name: "cut short at the end", in: `/a\04`, want: `/a\04`},
		{name: "escape at the end", in: `/a\040`, want: "/a "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unescapeMountPath(tc.in); got != tc.want {
				t.Errorf("unescapeMountPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestLoopbackSockaddr(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		family     int
		ip         []byte
		port       int
		err        string // a part of the error; "" for none
	}{
		{name: "IPv4", addr: "127.0.0.1:7011", family: syscall.AF_INET, ip: []byte{127, 0, 0, 1}, port: 7011},
		{name: "IPv4 other loopback", addr: "127.45.6.7:80", family: syscall.AF_INET, ip: []byte{127, 45, 6, 7}, port: 80},
		{name: "IPv6", addr: "[::1]:7011", family: syscall.AF_INET6, ip: append(make([]byte, 15), 1), port: 7011},
		{name: "port zero", addr: "127.0.0.1:0", family: syscall.AF_INET, ip: []byte{127, 0, 0, 1}, port: 0},
		{name: "not loopback", addr: "10.0.0.1:80", err: "not a loopback address"},
		{name: "any address", addr: "0.0.0.0:80", err: "not a loopback address"},
		{name: "no port", addr: "127.0.0.1", err: "not host:port"},
		{name: "port not a number", addr: "127.0.0.1:http", err: "has no port"},
		{name: "port too large", addr: "127.0.0.1:65536", err: "has no port"},
		{name: "octet too large", addr: "127.0.0.256:80", err: "not an IPv4 address"},
		{name: "too few octets", addr: "127.0.1:80", err: "not a loopback address"},
		{name: "IPv6 not loopback", addr: "[::2]:80", err: "not a loopback address"},
		{name: "host name", addr: "localhost:80", err: "not a loopback address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			family, sa, err := loopbackSockaddr(tc.addr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("loopbackSockaddr(%q) = %v, %v; want an error with %q", tc.addr, sa, err, tc.err)
				}
				return
			}
			if err != nil || family != tc.family {
				t.Fatalf("loopbackSockaddr(%q) = %d, %v, %v", tc.addr, family, sa, err)
			}
			var ip []byte
			var port int
			switch sa := sa.(type) {
			case *syscall.SockaddrInet4:
				ip, port = sa.Addr[:], sa.Port
			case *syscall.SockaddrInet6:
				ip, port = sa.Addr[:], sa.Port
			}
			if string(ip) != string(tc.ip) || port != tc.port {
				t.Errorf("loopbackSockaddr(%q) = %v port %d, want %v port %d", tc.addr, ip, port, tc.ip, tc.port)
			}
		})
	}
}

func TestParentDir(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{name: "nested", in: "/tmp/box/etc/resolv.conf", want: "/tmp/box/etc"},
		{name: "top level", in: "/bin", want: "/"},
		{name: "root", in: "/", want: "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parentDir(tc.in); got != tc.want {
				t.Errorf("parentDir(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// What a bound path may do: nothing set-user-ID anywhere, no device but under /dev, nothing
// written where the step says read-only, nothing run from a device.
func TestOpFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kind      string
		set, lack uintptr
	}{
		{name: "read-only", kind: OpRO, set: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV, lack: syscall.MS_NOEXEC},
		{name: "read-write", kind: OpRW, set: syscall.MS_NOSUID | syscall.MS_NODEV, lack: syscall.MS_RDONLY | syscall.MS_NOEXEC},
		{name: "device", kind: OpDevice, set: syscall.MS_NOSUID | syscall.MS_NOEXEC, lack: syscall.MS_RDONLY | syscall.MS_NODEV},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := opFlags(tc.kind)
			if got&tc.set != tc.set || got&tc.lack != 0 {
				t.Errorf("opFlags(%s) = %#x; want %#x set and %#x clear", tc.kind, got, tc.set, tc.lack)
			}
		})
	}
}
