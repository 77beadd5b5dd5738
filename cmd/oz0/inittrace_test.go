package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every oz0 command, `oz0 version` and each Tab press of completion included, first pays every
// linked package's init. These tests hold that cost by counts, which a loaded machine does not
// change: the bytes each init allocates (GODEBUG=inittrace=1, on the real binary) and the
// packages linked. An init's time follows its allocations: jsonschema's 1.7 MB of metaschemas was
// 12 ms; the 16 KB a package may take is well under the 2 ms an init may cost.

// maxInitBytes is what any package's init may allocate, but those of heavyInits.
const maxInitBytes = 16 << 10

// maxTotalInitBytes bounds all the inits together (0.88 MB when this was written; 3.1 MB before).
const maxTotalInitBytes = 1 << 20

// heavyInits are the packages whose init allocates more than maxInitBytes and cannot be made
// lazy while they are linked (third-party code that builds tables at init), with what each may
// take. None is oz0's own. Each line says what links it: dropping that dependency drops the line.
var heavyInits = map[string]int{
	// --jq (go-gh's jq): gojq's builtin functions, a table built at init.
	"github.com/itchyny/gojq": 256 << 10,
	// --template's color function (cmd/oz0/internal/ghtemplate): mgutz/ansi's table of colours.
	"github.com/mgutz/ansi": 40 << 10,
	// Hooks run as go-plugin plugins over gRPC (devserver/tenanthooks): protobuf's descriptors, gRPC,
	// x/net/trace (gRPC's), gob (go-plugin's net/rpc).
	"google.golang.org/protobuf/reflect/protodesc":  200 << 10,
	"google.golang.org/protobuf/types/descriptorpb": 64 << 10,
	"google.golang.org/grpc":                        40 << 10,
	"google.golang.org/grpc/internal/binarylog":     40 << 10,
	"golang.org/x/net/trace":                        32 << 10,
	"encoding/gob":                                  40 << 10,
	// The prompts (huh, bubbletea): ultraviolet's tables; bubbles' clipboard looks up xclip and
	// xsel on PATH at init.
	"github.com/charmbracelet/ultraviolet": 40 << 10,
	"github.com/atotto/clipboard":          24 << 10,
	// YAML (every file oz0 reads) and html/template (the dev UI).
	"gopkg.in/yaml%2ev3": 40 << 10,
	"html/template":      24 << 10,
}

// unlinked are packages the binary must not link: the browser driver of the UI's tests and the
// providers' SDKs the gateway's tests use. Any package under these paths fails the test.
var unlinked = []string{
	"github.com/chromedp/",
	"github.com/anthropics/anthropic-sdk-go",
	"github.com/openai/openai-go",
}

type initCost struct {
	pkg    string
	bytes  int
	allocs int
}

// parseInittrace reads GODEBUG=inittrace=1's lines: "init PKG @T ms, C ms clock, B bytes, A allocs".
func parseInittrace(out []byte) ([]initCost, error) {
	var costs []initCost
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 11 || f[8] != "bytes," || f[10] != "allocs" {
			return nil, fmt.Errorf("an inittrace line not as expected: %q", line)
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("an inittrace line not as expected: %q", line)
		}
		costs = append(costs, initCost{pkg: f[1], bytes: b, allocs: a})
	}
	return costs, sc.Err()
}

func TestVersionInitIsLight(t *testing.T) {
	// Built as go test built the packages (no -trimpath, cgo off as make test has it), so that
	// the build is a link of what the build cache holds.
	bin := filepath.Join(t.TempDir(), "oz0")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oz0 version: %v\n%s", err, stderr.Bytes())
	}
	costs, err := parseInittrace(stderr.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(costs) < 50 {
		t.Fatalf("only %d inits traced; is GODEBUG=inittrace=1 still what prints them?\n%s", len(costs), stderr.Bytes())
	}
	total := 0
	for _, c := range costs {
		total += c.bytes
		limit, heavy := heavyInits[c.pkg]
		if !heavy {
			limit = maxInitBytes
		}
		if c.bytes > limit {
			t.Errorf("the init of %s allocates %d bytes (%d allocations) in every oz0 command, over its %d: "+
				"build what it builds on first use (sync.OnceValue, internal/lazyre) instead of at init", c.pkg, c.bytes, c.allocs, limit)
		}
	}
	for pkg, limit := range heavyInits {
		if !slicesContainsPkg(costs, pkg) {
			t.Errorf("%s is in heavyInits (%d bytes) but its init no longer runs: take it out", pkg, limit)
		}
	}
	if total > maxTotalInitBytes {
		t.Errorf("the inits allocate %d bytes together, over %d", total, maxTotalInitBytes)
	}
}

func slicesContainsPkg(costs []initCost, pkg string) bool {
	for _, c := range costs {
		if c.pkg == pkg {
			return true
		}
	}
	return false
}

func TestBinaryLinksNoTestOnlyDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range unlinked {
			if strings.HasPrefix(pkg, bad) {
				t.Errorf("oz0 links %s, whose init every command would pay: keep it to tests", pkg)
			}
		}
	}
}

func TestParseInittrace(t *testing.T) {
	out := []byte("init internal/bytealg @0.005 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"hello\n" +
		"init gopkg.in/yaml%2ev3 @24 ms, 0.072 ms clock, 25720 bytes, 276 allocs\n")
	got, err := parseInittrace(out)
	if err != nil || len(got) != 2 || got[1] != (initCost{"gopkg.in/yaml%2ev3", 25720, 276}) {
		t.Fatalf("parseInittrace = %v, %v", got, err)
	}
	if _, err := parseInittrace([]byte("init x @1 ms, 2 ms clock, many bytes, 0 allocs\n")); err == nil {
		t.Fatal("a malformed line was read")
	}
}
