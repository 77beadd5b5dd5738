package apiv1

import (
	"strings"
	"testing"
)

func TestParseContext(t *testing.T) {
	tok := NewToken()
	c, err := ParseContext("http://127.0.0.1:7311#" + tok)
	if err != nil || c.URL != "http://127.0.0.1:7311" || c.Token != tok {
		t.Fatalf("got %+v, %v", c, err)
	}
	if c.String() != "http://127.0.0.1:7311#"+tok {
		t.Errorf("String() = %s", c)
	}
	for in, want := range map[string]string{
		"":                                "is not set",
		"127.0.0.1:7311":                  "is not valid",
		"https://127.0.0.1:7311#oz0t_x":   "want an http://host:port URL",
		"http://example.com:7311#oz0t_x":  "only listens on loopback",
		"http://127.0.0.1:7311":           "no token",
		"http://127.0.0.1:7311#notatoken": "no token",
		"garbage":                         "want an http://host:port URL",
		"http://127.0.0.1#oz0t_x":         "no port",
		"http://127.0.0.1:99999#oz0t_x":   "no port",
		"http://127.0.0.1:7311/x#oz0t_x":  "and nothing more",
		"http://u:p@127.0.0.1:1#oz0t_x":   "and nothing more",
		"http://127.0.0.1:1?q=1#oz0t_x":   "and nothing more",
		"http://127.0.0.1:1#oz0t_":        "has characters no token",
		"http://127.0.0.1:1#oz0t_a\nb":    "has characters no token",
		"http://127.0.0.1:1#oz0t_a b":     "has characters no token",
		"http://127.0.0.1:1#oz0t_\xff":    "has characters no token",
	} {
		_, err := ParseContext(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseContext(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "localhost": true, "LocalHost": true, "10.0.0.1": false, "example.com": false, "0.0.0.0": false} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, got)
		}
	}
}
