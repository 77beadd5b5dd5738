package apiv1

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"net/url"
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

// ParseContext reads an OZ0_CONTEXT value.
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
	if !strings.HasPrefix(u.Fragment, TokenPrefix) {
		return Context{}, bad("no token after #")
	}
	return Context{URL: u.Scheme + "://" + u.Host, Token: u.Fragment}, nil
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
