package apiv1

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ContextEnv is the variable `oz0 dev` asks the user to export.
const ContextEnv = "OZ0_CONTEXT"

// Context says where the dev server is and how to prove the right to use it. It is written as
// the server's URL with the token as the fragment, `http://127.0.0.1:7311#oz0t_…`: one word to
// export, and a fragment is never sent over the wire by an HTTP client by accident.
type Context struct {
	URL   string // http://127.0.0.1:PORT, no trailing slash
	Token string
}

// String is the value to export.
func (c Context) String() string { return c.URL + "#" + c.Token }

// ErrNoContext is returned when OZ0_CONTEXT is unset.
var ErrNoContext = errors.New(ContextEnv + " is not set; start `oz0 dev` in your plugin and run the `export " + ContextEnv + "=...` line it prints")

// ParseContext reads an OZ0_CONTEXT value: http://HOST:PORT#TOKEN on a loopback host, and nothing
// else, so that a mistyped or garbled value is refused here, with how to mend it, rather than as
// an HTTP client's error about a header or a port.
func ParseContext(v string) (Context, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return Context{}, ErrNoContext
	}
	bad := func(why string) error {
		return fmt.Errorf("%s is not valid (%s); export the line `oz0 dev` printed, like %s=http://127.0.0.1:7311#oz0t_...", ContextEnv, why, ContextEnv)
	}
	u, err := url.Parse(v)
	if err != nil {
		return Context{}, bad("not a URL")
	}
	if u.Scheme != "http" || u.Host == "" {
		return Context{}, bad("want an http://host:port URL")
	}
	if !IsLoopbackHost(u.Hostname()) {
		return Context{}, bad("the dev server only listens on loopback, not " + u.Hostname())
	}
	if port, err := strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
		return Context{}, bad("no port: want http://host:port")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || (u.Path != "" && u.Path != "/") {
		return Context{}, bad("want http://host:port#token and nothing more")
	}
	if !strings.HasPrefix(u.Fragment, TokenPrefix) {
		return Context{}, bad("no token after #")
	}
	if !validToken(u.Fragment) {
		return Context{}, bad("the token after # has characters no token of `oz0 dev` has")
	}
	return Context{URL: u.Scheme + "://" + u.Host, Token: u.Fragment}, nil
}

// ValidToken reports whether tok could be a token NewToken made (a token kept in a file is checked
// before it is used again).
func ValidToken(tok string) bool { return strings.HasPrefix(tok, TokenPrefix) && validToken(tok) }

// validToken reports whether tok could be a token NewToken made: the prefix, then letters and
// digits. A token with a space or a control character would not even make an HTTP header.
func validToken(tok string) bool {
	rest := strings.TrimPrefix(tok, TokenPrefix)
	if rest == "" || len(tok) > 256 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// TokenPrefix starts every dev server token, so a leaked one is recognisable.
const TokenPrefix = "oz0t_"

// NewToken makes a random bearer token.
func NewToken() string {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// IsLoopbackHost reports whether host (no port) names this machine's loopback interface.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
