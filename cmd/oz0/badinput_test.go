package main

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/devserver"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// What every command of the tree is, for the bad-input cases made from it. A command that is not
// here fails TestBadInput: add it, and the cases come with it.
type cmdSpec struct {
	args   []string // a well-formed invocation after the command's path (never run as it is)
	min    int      // how many of args are positional arguments it cannot go without
	server bool     // it talks to the dev server in OZ0_CONTEXT
	stdin  string
	// many: it takes any number of positional arguments (DIRs, reports), so three more are not a
	// usage error of their count; its case of them is what it says of the first it cannot use.
	many *wants
}

type wants struct {
	code int
	want string
}

// A well-formed ID of each kind that the dev server does not have.
const (
	noJob      = "job_aaaaaaaaaaaaaaaaaaaa"
	noApproval = "apr_aaaaaaaaaaaa"
	noRule     = "rule_aaaaaaaaaaaa"
)

var commandSpecs = map[string]cmdSpec{
	"oz0":                  {},
	"oz0 help":             {args: []string{"plugin"}},
	"oz0 version":          {},
	"oz0 completion":       {args: []string{"bash"}, min: 1},
	"oz0 plugin":           {},
	"oz0 plugin new":       {args: []string{"fresh", "--template", "byo-agent", "-d", "Says hi"}},
	"oz0 plugin templates": {},
	"oz0 plugin lint":      {args: []string{"plug"}, many: &wants{3, "plugin directory x1 does not exist"}},
	"oz0 plugin test":      {args: []string{"plug"}, many: &wants{3, "plugin directory x1 does not exist"}},
	"oz0 plugin list":      {args: []string{"plug"}},
	"oz0 eval":             {args: []string{"plug"}, many: &wants{2, "the plugin in plug has no evals directory"}},
	"oz0 eval merge":       {args: []string{"r.json"}, min: 1, many: &wants{2, "r.json does not exist; give the shards' reports"}},
	"oz0 eval add":         {args: []string{noJob}, min: 1, server: true},
	"oz0 dev":              {args: []string{"--ephemeral", "--plugin", "plug"}},
	"oz0 run":              {args: []string{"hello", "hi"}, min: 2, server: true},
	"oz0 job":              {},
	"oz0 job list":         {server: true},
	"oz0 job show":         {args: []string{noJob}, min: 1, server: true},
	"oz0 job watch":        {args: []string{noJob}, min: 1, server: true},
	"oz0 ui":               {args: []string{"--print"}, server: true},
	"oz0 job cancel":       {args: []string{noJob}, min: 1, server: true},
	"oz0 job trace":        {args: []string{noJob}, min: 1, server: true},
	"oz0 job replay":       {args: []string{noJob}, min: 1, server: true},
	"oz0 job script":       {args: []string{noJob}, min: 1, server: true},
	"oz0 secret":           {},
	"oz0 secret set":       {args: []string{"OPENAI_API_KEY"}, min: 1, server: true, stdin: "a value\n"},
	"oz0 secret list":      {server: true},
	"oz0 secret rm":        {args: []string{"SOME_KEY"}, min: 1, server: true},
	"oz0 tenant":           {},
	"oz0 tenant quota":     {},
	// The quota commands work on the tenant file when no oz0 dev runs: not server commands.
	"oz0 tenant quota set":  {args: []string{"tokens_per_day", "1000"}, min: 2},
	"oz0 tenant quota list": {},
	"oz0 tenant quota rm":   {args: []string{"tokens_per_day"}, min: 1},
	"oz0 tenant usage":      {server: true},
	"oz0 tenant kill":       {server: true},
	"oz0 tenant resume":     {server: true},
	"oz0 approval":          {},
	"oz0 approval list":     {server: true},
	"oz0 approval approve":  {args: []string{noApproval}, min: 1, server: true},
	"oz0 approval deny":     {args: []string{noApproval, "--reason", "no"}, min: 1, server: true},
	"oz0 approval rules":    {server: true},
	"oz0 approval revoke":   {args: []string{noRule}, min: 1, server: true},
	"oz0 doctor":            {},
	"oz0 fake-model":        {},
	"oz0 fake-model serve":  {},
	"oz0 schema":            {},
}

// What a bad value of each string flag is: a value it refuses and a part of what it says. A flag
// of a path has its cases in pathCases (and TestBadInput checks each has one); a flag of free
// text (an agent to filter by) takes anything. Keys are "FLAG" or, where commands differ,
// "COMMAND --FLAG".
var flagBadValues = map[string]struct{ value, want string }{
	"--scope":                   {"never", `unknown --scope "never"; choose once, job or always`},
	"--log-level":               {"loud", `unknown --log-level "loud"; choose one of debug, info, warn, error`},
	"--log-format":              {"xml", `unknown --log-format "xml"; choose text or json`},
	"--sandbox":                 {"tight", `--sandbox: unknown sandbox tier "tight"`},
	"--status":                  {"done", `unknown --status "done"; the statuses are queued,`},
	"--format":                  {"xml", `unknown --format "xml"; choose one of`},
	"--addr":                    {"0.0.0.0:0", `--addr "0.0.0.0:0" is not a loopback address`},
	"--jq":                      {".[", `--jq ".[" is not a whole jq expression: it ends too soon`},
	"--template":                {"{{.x", `--template "{{.x" is not a Go template: unclosed action`},
	"oz0 plugin new --template": {"nope", `unknown template "nope"; choose one of: byo-agent`},
	"oz0 eval --format":         {"xml", `unknown --format "xml"; choose table or github`},
	"oz0 eval merge --format":   {"xml", `unknown --format "xml"; choose table or github`},
	"--shard":                   {"0/3", `--shard "0/3": the shard counts from 1 to 3`},
	"--description":             {"two\nlines", "description has a control character or line break"},
	"--harness":                 {"nope", `--harness "nope": the plugin in plug has no harness "nope"; it has h`},
	"--base-url":                {"not a url", `--base-url "not a url" is not an http(s) URL`},
	"--otlp-endpoint":           {"localhost:4318", `--otlp-endpoint "localhost:4318" is not an http(s) URL such as http://localhost:4318`},
	"--otlp-protocol":           {"http/json", `unknown --otlp-protocol "http/json"; choose http/protobuf or grpc`},
	"--reason":                  {"\xffno", "--reason is not UTF-8 text (byte 0xff at offset 0); retype it"},
	"--input":                   {"\xfe", "--input is not UTF-8 text (byte 0xfe at offset 0)"},
	"--record":                  {"Bad Name", `--record "Bad Name" is not a model record's name; use lowercase letters, digits, - and _, like anthropic`},
	"--by":                      {"week", `--by "week" is not a way to sum the usage; use one of record, agent, day`},
	"oz0 eval add --file":       {"notes.txt", `--file: the eval file "notes.txt" is not a name in the plugin's evals directory`},
}

// Flags of free text, which no value makes wrong.
var freeFlags = map[string]string{
	"--agent": "a filter: an agent that is gone may still have jobs",
	"--name":  "a case's name, any text; one its eval file has already is refused once the file is read",
}

// Path flags whose bad values pathCases cannot show here, and why.
var pathFlagsElsewhere = map[string]string{
	"oz0 doctor --plugin": "doctor reports a missing plugin as a check (warn) with its mend: doctor's own tests",
}

// badFixtures is the world the cases run in: a directory with a plugin (plug) and things that are
// not what a command wants, and dev servers: a live one, and addresses where none is.
type badFixtures struct {
	*exitFixtures
	live     apiv1.Context
	client   *client.Client
	contexts map[string]string // by name: the OZ0_CONTEXT values a case may run with
}

func newBadFixtures(t *testing.T) *badFixtures {
	t.Helper()
	fx := &badFixtures{exitFixtures: newExitFixtures(t)}
	in := func(name string) string { return filepath.Join(fx.dir, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(in("afile"), []byte("not a directory\n"), 0o644))
	must(os.Mkdir(in("adir"), 0o755))
	must(os.Symlink("loop", in("loop"))) // unreadable even to root: ELOOP
	must(os.WriteFile(in("latin1.txt"), []byte("caf\xe9\n"), 0o644))
	must(os.WriteFile(in("huge.txt"), []byte(strings.Repeat("a", apiv1.MaxInput+1)), 0o644))
	must(os.Mkdir(in("full"), 0o755))
	must(os.WriteFile(in("full/keep.txt"), []byte("mine\n"), 0o644))

	srv, err := devserver.Start(devserver.Config{PluginDirs: []string{in("plug")}, Ephemeral: true, Poll: -1, Sandbox: sandbox.None})
	must(err)
	t.Cleanup(func() { srv.Close() })
	fx.live = srv.Context()
	fx.client = client.New(fx.live)

	// Things at a loopback address that are not oz0 dev: an HTTP server of another kind, a port
	// that closes every connection, and one that answers with something that is not HTTP.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body>Not Found</body></html>")
	}))
	t.Cleanup(other.Close)
	tcpServer := func(answer []byte) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(err)
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				// The request is read first, so that the client has written it when the
				// connection closes: closed before that, the client says it may not have
				// reached the server (net/http's "server closed idle connection"), which is
				// another case, and which of the two came depended on the machine's load.
				buf := make([]byte, 4096)
				c.Read(buf)
				if answer != nil {
					c.Write(answer)
				}
				c.Close()
			}
		}()
		return "http://" + ln.Addr().String() + "#" + apiv1.NewToken()
	}
	fx.contexts = map[string]string{
		"none":        "",
		"live":        fx.live.String(),
		"garbage":     "garbage",
		"no-port":     "http://127.0.0.1#" + apiv1.NewToken(),
		"off-host":    "http://10.0.0.1:7311#" + apiv1.NewToken(),
		"bad-token":   "http://127.0.0.1:7311#oz0t_a b",
		"dead":        fx.deadCtx,
		"wrong-token": fx.live.URL + "#" + apiv1.NewToken(),
		"other-http":  other.URL + "#" + apiv1.NewToken(),
		"closes":      tcpServer(nil),
		"not-http":    tcpServer([]byte("SSH-2.0-OpenSSH_9.6\r\n")),
	}
	return fx
}

// serverState is what the live dev server holds that a refused command must not have changed.
func (fx *badFixtures) serverState(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	jobs, err := fx.client.Jobs(ctx, "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := fx.client.Secrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	approvals, err := fx.client.Approvals(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := fx.client.Rules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d jobs %v, secrets %v, %d approvals, %d rules", len(jobs), jobs, secrets, len(approvals), len(rules))
}

// treeState lists every file under dir with its mode, size and time, and every directory.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil && p != dir {
			return nil // a directory no one may read (locked): its name is listed already
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			// A directory's time is not kept: one made and removed again changes its parent's.
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, info.Mode()))
		} else {
			lines = append(lines, fmt.Sprintf("%s %v %d %d", rel, info.Mode(), info.Size(), info.ModTime().UnixNano()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// lineDiff lists the lines only in was (-) and only in now (+).
func lineDiff(was, now string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	before, after := in(was), in(now)
	var out []string
	for l := range before {
		if !after[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range after {
		if !before[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// badCase is one bad invocation: its arguments, the OZ0_CONTEXT it runs with (a name of
// fixtures' contexts; "" is none), its stdin, the exit code and a part of the one line it says.
type badCase struct {
	args  []string
	ctx   string
	stdin string
	code  int
	want  string
}

func (c badCase) String() string {
	var shown []string
	for _, a := range c.args {
		if len(a) > 40 {
			a = fmt.Sprintf("<%d bytes>", len(a))
		}
		if a == "" || strings.ContainsAny(a, " \n\t") || !utf8.ValidString(a) {
			a = fmt.Sprintf("%q", a)
		}
		shown = append(shown, a)
	}
	s := "oz0 " + strings.Join(shown, " ")
	if c.ctx != "" {
		s += " (OZ0_CONTEXT " + c.ctx + ")"
	}
	return s
}

// cl is a command line: fields of line, then more as they are.
func cl(line string, more ...string) []string { return append(strings.Fields(line), more...) }

// chained matches the wording of a Go error chain: an operation and its object after the start
// or a colon ("stat x: ", `Get "http://…": `, "dial tcp …: "), strconv's and the JSON decoder's
// words, and what a panic prints.
var chained = regexp.MustCompile(`(^|: )(open|stat|lstat|mkdir|remove|rename|read|write|readdirent|dial|Get|Post|Put|Delete) \S+: |strconv\.|time: invalid|invalid character|net/http:|unexpected EOF|goroutine \d|panic:|\bEOF\b`)

// treeCases are the cases made from the command tree: for every command, an unknown flag, every
// flag without its value, a bad value of every flag that parses one (a number, a duration, a
// switch) or refuses some (flagBadValues), arguments too many and too few, and, for a command that
// talks to the dev server, every kind of OZ0_CONTEXT that does not lead to one.
func treeCases(t *testing.T, root *cobra.Command) (cases []badCase, pathFlags map[string]bool) {
	pathFlags = map[string]bool{}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden {
			return
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		path := cmd.CommandPath()
		spec, ok := commandSpecs[path]
		if !ok {
			t.Errorf("%s has no entry in commandSpecs: add one, and its bad-input cases follow", path)
			return
		}
		words := strings.Fields(path)[1:]
		line := func(extra ...string) []string {
			return append(append(append([]string{}, words...), spec.args...), extra...)
		}
		see := fmt.Sprintf("; see '%s --help'", path)
		add := func(c badCase) {
			if c.ctx == "" && spec.server {
				c.ctx = "live"
			}
			if c.stdin == "" {
				c.stdin = spec.stdin
			}
			cases = append(cases, c)
		}
		add(badCase{args: line("--no-such-flag"), code: 2, want: "unknown flag: --no-such-flag" + see})
		add(badCase{args: line("-Z"), code: 2, want: "unknown shorthand flag: 'Z' in -Z" + see})
		if spec.many != nil {
			add(badCase{args: line("x1", "x2", "x3"), code: spec.many.code, want: spec.many.want})
		} else {
			add(badCase{args: line("x1", "x2", "x3"), code: 2, want: "--help'"})
		}
		if spec.min > 0 {
			drop := append(append([]string{}, words...), spec.args[:spec.min-1]...)
			add(badCase{args: drop, code: 2, want: path + " needs"})
		}
		cmd.Flags().VisitAll(func(fl *pflag.Flag) {
			if fl.Hidden {
				return
			}
			name := "--" + fl.Name
			if fl.NoOptDefVal == "" { // takes a value
				add(badCase{args: line(name), code: 2, want: name + " needs a value: " + fl.Usage})
			}
			switch fl.Value.Type() {
			case "int":
				add(badCase{args: line(name, "many"), code: 2, want: name + ` takes a whole number, not "many"`})
				add(badCase{args: line(name, "99999999999999999999"), code: 2, want: name + " takes a whole number"})
				return
			case "duration":
				add(badCase{args: line(name, "soon"), code: 2, want: name + ` takes a duration such as 30s, 2m or 1m30s, not "soon"`})
				add(badCase{args: line(name, "-1s"), code: 2, want: name + " must be longer than 0"})
				return
			case "bool":
				add(badCase{args: line(name + "=maybe"), code: 2, want: name + ` is a switch: give it alone, or as ` + name + `=false, not with "maybe"`})
				return
			}
			bad, ok := flagBadValues[path+" "+name]
			if !ok {
				bad, ok = flagBadValues[name]
			}
			switch {
			case ok:
				add(badCase{args: line(name, bad.value), code: 2, want: bad.want})
			case freeFlags[name] != "":
			default:
				pathFlags[path+" "+name] = true
			}
		})
		if spec.server {
			for _, c := range []struct{ ctx, want string }{
				{"none", "OZ0_CONTEXT is not set and no oz0 dev runs for a plugin in this folder; start `oz0 dev` in your plugin (commands in its folder find it), or run the `export OZ0_CONTEXT=...` line it prints"},
				{"garbage", "OZ0_CONTEXT is not valid (want an http://host:port URL); export the line `oz0 dev` printed"},
				{"no-port", "OZ0_CONTEXT is not valid (no port: want http://host:port); export the line"},
				{"off-host", "OZ0_CONTEXT is not valid (the dev server only listens on loopback, not 10.0.0.1); export the line"},
				{"bad-token", "OZ0_CONTEXT is not valid (the token after # has characters no token of `oz0 dev` has); export the line"},
				{"dead", "(connection refused); start `oz0 dev` and export the OZ0_CONTEXT line it prints"},
				{"wrong-token", "refused the token in OZ0_CONTEXT (missing or wrong bearer token); export the line the running `oz0 dev` printed"},
				{"other-http", "answered 404 Not Found: it is not an oz0 dev server; start `oz0 dev` and export the OZ0_CONTEXT line it prints"},
				{"closes", "closed the connection without an answer: it is not an oz0 dev server; start `oz0 dev`"},
				{"not-http", "does not speak HTTP: it is not an oz0 dev server; start `oz0 dev`"},
			} {
				add(badCase{args: line(), ctx: c.ctx, code: 3, want: c.want})
			}
		}
	}
	walk(root)
	return cases, pathFlags
}

// pathCases are the cases of paths, names, IDs and input: a missing or unreadable directory or
// file, a file where a directory goes and the other way round, huge input, input that is not
// UTF-8, IDs that are malformed or name nothing.
func pathCases(fx *badFixtures) []badCase {
	in := func(name string) string { return filepath.Join(fx.dir, name) }
	huge := strings.Repeat("a", apiv1.MaxInput+1)
	cases := []badCase{
		// Plugin directories.
		{args: cl("plugin lint nowhere"), code: 3, want: "plugin directory nowhere does not exist; pass a plugin's directory, or run inside one"},
		{args: cl("plugin lint afile"), code: 3, want: "afile is not a directory; pass the plugin's directory"},
		{args: cl("plugin lint loop"), code: 3, want: "cannot read plugin directory loop: too many levels of symbolic links"},
		{args: cl("plugin test nowhere"), code: 3, want: "plugin directory nowhere does not exist"},
		{args: cl("plugin lint", ""), code: 3, want: "the plugin directory is an empty path; pass a plugin's directory, or . for the current one"},
		{args: cl("dev --plugin", ""), code: 3, want: "the plugin directory is an empty path"},
		{args: cl("plugin test afile"), code: 3, want: "afile is not a directory"},
		{args: cl("plugin test loop"), code: 3, want: "cannot read plugin directory loop: too many levels of symbolic links"},
		{args: cl("dev --ephemeral --plugin nowhere"), code: 3, want: "plugin directory nowhere does not exist"},
		{args: cl("dev --plugin afile"), code: 3, want: "afile is not a directory"},
		{args: cl("dev --plugin loop"), code: 3, want: "cannot read plugin directory loop: too many levels of symbolic links"},
		{args: cl("dev --plugin plug --state-dir afile"), code: 3, want: "cannot make the state directory " + in("afile") + ": not a directory; choose another with --state-dir"},
		{args: cl("dev --plugin plug --state-dir afile/sub"), code: 3, want: "cannot make the state directory " + in("afile/sub") + ": "},
		{args: cl("dev --plugin plug --hooks nowhere.yaml"), code: 3, want: "cannot read --hooks nowhere.yaml: no such file or directory"},
		{args: cl("dev --plugin plug --hooks adir"), code: 3, want: "cannot read the hooks file adir: it is a directory"},
		{args: cl("dev --ephemeral --plugin plug --fake-script nowhere.yaml"), code: 3, want: "cannot read the fake model script nowhere.yaml"},
		{args: cl("dev --ephemeral --plugin plug --fake-script adir"), code: 3, want: "cannot read the fake model script adir: it is a directory"},
		{args: cl("dev --ephemeral --plugin plug --ready-file afile/ready"), code: 2, want: "--ready-file afile/ready: afile is not a directory; give a file in a directory"},
		{args: cl("dev --ephemeral --plugin plug --ready-file nowhere/ready"), code: 2, want: "--ready-file nowhere/ready: the directory nowhere does not exist; make it first (mkdir -p nowhere), or give another file"},
		{args: cl("dev --ephemeral --plugin plug --ready-file adir"), code: 2, want: "--ready-file adir is a directory; give a file to write"},
		{args: cl("fake-model serve --script nowhere.yaml"), code: 3, want: "cannot read the fake model script nowhere.yaml"},
		{args: cl("fake-model serve --script adir"), code: 3, want: "it is a directory"},
		{args: cl("fake-model serve --ready-file afile/ready"), code: 2, want: "--ready-file afile/ready: afile is not a directory"},
		{args: cl("plugin test plug --script nowhere.yaml"), code: 3, want: "cannot read the fake model script nowhere.yaml"},
		{args: cl("plugin lint plug --fake-script nowhere.yaml"), code: 3, want: "cannot read nowhere.yaml: no such file or directory"},
		{args: cl("plugin lint plug --hooks nowhere.yaml"), code: 3, want: "cannot read nowhere.yaml: no such file or directory"},
		{args: cl("plugin lint plug --format sarif --base afile"), code: 2, want: "--base afile is not a directory"},
		{args: cl("plugin new fresh -t byo-agent -d Hi"), code: 2, want: `unknown shorthand flag: 't' in -t; did you mean "--template"? See 'oz0 plugin new --help'`},
		{args: cl("plugin new fresh --template byo-agent -d Hi --dir afile"), code: 2, want: "--dir afile is a file; give the directory to make the plugin in"},
		{args: cl("plugin new full --template byo-agent -d Hi"), code: 2, want: "already exists and is not empty"},
		{args: cl("plugin new afile --template byo-agent -d Hi"), code: 2, want: "exists and is a file"},
		{args: cl("schema --write afile"), code: 2, want: "--write afile: it is a file; give a directory"},
		{args: cl("eval nowhere"), code: 2, want: "nowhere does not exist; give an eval file, or a plugin's directory"},
		{args: cl("eval plug"), code: 2, want: "the plugin in plug has no evals directory; write cases in evals/*.yaml (docs/eval.md)"},
		{args: cl("eval afile"), code: 2, want: "afile is not in a plugin: no directory above it has an oz0-plugin.yaml"},
		{args: cl("eval plug --baseline nowhere.json"), code: 2, want: "--baseline: nowhere.json: no such file or directory"},
		{args: cl("eval plug --baseline adir"), code: 2, want: "--baseline: adir: is a directory"},
		{args: cl("eval plug --baseline afile"), code: 2, want: "--baseline: afile is not the output of oz0 eval --json"},
		{args: cl("eval plug --junit adir"), code: 2, want: "--junit adir is a directory; give a file to write"},
		{args: cl("eval plug --junit nowhere/j.xml"), code: 2, want: "--junit nowhere/j.xml: the directory nowhere does not exist"},
		{args: cl("eval plug --report adir"), code: 2, want: "--report adir is a directory; give a file to write"},
		{args: cl("eval plug --report nowhere/r.json"), code: 2, want: "--report nowhere/r.json: the directory nowhere does not exist"},
		{args: cl("eval merge nowhere.json"), code: 2, want: "nowhere.json does not exist; give the shards' reports (oz0 eval --shard i/n --json)"},
		{args: cl("eval merge afile"), code: 2, want: "afile is not the output of oz0 eval --json"},
		{args: cl("eval merge adir"), code: 2, want: "adir is a directory; give the shards' reports in it: adir/*.json"},
		{args: cl("eval merge afile --baseline nowhere.json"), code: 2, want: "--baseline: nowhere.json: no such file or directory"},
		{args: cl("eval merge afile --junit adir"), code: 2, want: "--junit adir is a directory; give a file to write"},
		{args: cl("eval merge afile --report nowhere/r.json"), code: 2, want: "--report nowhere/r.json: the directory nowhere does not exist"},
		{args: cl("tenant quota set tokens_per_day 5 --state-dir afile"), code: 3, want: "cannot make the state directory afile: "},
		{args: cl("tenant quota list --state-dir afile"), code: 3, want: "cannot read afile/tenant.json: not a directory"},
		{args: cl("tenant quota rm tokens_per_day --state-dir nowhere"), code: 2, want: "the tenant has no quota tenant.tokens_per_day (nowhere has no tenant.json); oz0 tenant quota list shows them"},
		{args: cl("tenant quota set tokens_per_week 5"), code: 2, want: `"tokens_per_week" is not a quota; use one of tokens_per_day, tokens_per_month,`},
		{args: cl("tenant quota set tokens_per_day 1.5"), code: 2, want: "the limit of tenant.tokens_per_day counts tokens: give a whole number up to 10^15"},
		{args: cl("tenant quota set cost_usd_per_day 0"), code: 2, want: "the limit of tenant.cost_usd_per_day must be a number above 0; to lift the quota, remove it"},
		{args: cl("tenant quota set cost_usd_per_day lots"), code: 2, want: `the limit "lots" is not a number; give one like 2000000 (tokens, requests) or 5 (US dollars)`},
		{args: cl("plugin list nowhere"), code: 2, want: "nowhere does not exist; give the directory to look for plugins in"},
		{args: cl("plugin list afile"), code: 2, want: "afile is not a directory; give the directory to look for plugins in"},
		{args: cl("job script", noJob, "-o", "adir"), ctx: "live", code: 2, want: "--output adir is a directory; give a file to write"},
		{args: cl("job script", noJob, "--output", "nowhere/out.yaml"), ctx: "live", code: 2, want: "--output nowhere/out.yaml: the directory nowhere does not exist; make it first (mkdir -p nowhere)"},
		{args: cl("run hello --input-file nowhere.txt"), ctx: "live", code: 3, want: "cannot read --input-file nowhere.txt: no such file or directory"},
		{args: cl("run hello --input-file adir"), ctx: "live", code: 2, want: "--input-file adir is a directory; give the file with the input"},
		{args: cl("run hello --input-file loop"), ctx: "live", code: 3, want: "cannot read --input-file loop: too many levels of symbolic links"},

		// Input: huge, not UTF-8, empty.
		{args: cl("run hello", huge), ctx: "live", code: 2, want: "INPUT is over 3 MiB, the most a job takes; give a shorter one"},
		{args: cl("run hello -"), ctx: "live", stdin: huge, code: 2, want: "the input on stdin is over 3 MiB"},
		{args: cl("run hello --input-file huge.txt"), ctx: "live", code: 2, want: "--input-file huge.txt is over 3 MiB"},
		{args: cl("run hello --input-file /dev/zero"), ctx: "live", code: 2, want: "--input-file /dev/zero is over 3 MiB"},
		{args: cl("run hello", "caf\xe9"), ctx: "live", code: 2, want: "INPUT is not UTF-8 text (byte 0xe9 at offset 3); a job's input is text or JSON: convert it first"},
		{args: cl("run hello -"), ctx: "live", stdin: "\xff\xfe", code: 2, want: "the input on stdin is not UTF-8 text (byte 0xff at offset 0)"},
		{args: cl("run hello --input-file latin1.txt"), ctx: "live", code: 2, want: "--input-file latin1.txt is not UTF-8 text"},
		{args: cl("run nobody hi"), ctx: "live", code: 2, want: `unknown agent "nobody"; the dev server runs: hello`},
		{args: cl("run", "", "hi"), ctx: "live", code: 2, want: `unknown agent ""`},
		{args: cl("secret set SOME_KEY"), ctx: "live", stdin: "\xffkey", code: 2, want: "the value of SOME_KEY is not UTF-8 text (byte 0xff at offset 0); a secret is text"},
		{args: cl("secret set SOME_KEY"), ctx: "live", stdin: strings.Repeat("k", 64<<10+1), code: 2, want: "the value of SOME_KEY is over 64 KiB, the most a secret holds"},
		{args: cl("secret set SOME_KEY"), ctx: "live", stdin: "\n", code: 2, want: "the value of SOME_KEY is empty; pipe it in"},
		{args: cl("secret set ANTHROPIC_API_KEY --base-url", "ftp://x"), ctx: "live", stdin: "k", code: 2, want: `--base-url "ftp://x" is not an http(s) URL`},
		{args: cl("secret set", "bad-name"), ctx: "live", stdin: "v", code: 2, want: `secret name "bad-name" is not valid; use capitals`},
		{args: cl("secret set", strings.Repeat("A", 5000)), ctx: "live", stdin: "v", code: 2, want: `secret name "AAAA`},
		{args: cl("secret rm", ""), ctx: "live", code: 2, want: `secret name "" is not valid`},
		{args: cl("secret rm NO_SUCH_KEY"), ctx: "live", code: 2, want: "no such secret: NO_SUCH_KEY; `oz0 secret list` shows the secrets"},
		{args: cl("plugin new", "\xff", "--template", "byo-agent", "-d", "Hi"), code: 2, want: `plugin name "\xff" is not UTF-8 text`},
		{args: cl("plugin new", strings.Repeat("a", 5000), "--template", "byo-agent", "-d", "Hi"), code: 2, want: "is 5000 characters; use at most 63"},
		{args: cl("plugin new", "ab\ncd", "--template", "byo-agent", "-d", "Hi"), code: 2, want: `plugin name "ab\ncd" has a line break at position 3`},
		{args: cl("plugin new fresh --template byo-agent -d", "caf\xe9"), code: 2, want: "description is not valid UTF-8"},
		{args: cl("plugin new fresh --template byo-agent -d", strings.Repeat("d", 100000)), code: 2, want: "description is 100000 characters; keep it to one line of at most 200"},
		{args: cl("approval deny", noApproval, "--reason", strings.Repeat("r", 100000)), ctx: "live", code: 2, want: "reason is 100000 bytes, over the limit of 65536"},
		{args: cl("completion tcsh"), code: 2, want: `unknown shell "tcsh"; choose bash, zsh, fish or powershell`},
		{args: cl("schema nope"), code: 2, want: `no schema "nope"; oz0 schema lists them`},
		{args: cl("help plugn"), code: 2, want: `unknown command "plugn" for "oz0"; did you mean "plugin"?`},
		{args: cl("job list --limit 0"), ctx: "live", code: 2, want: "--limit must be at least 1"},
		{args: cl("dev --max-sessions 0"), code: 2, want: "--max-sessions must be at least 1, not 0"},
		{args: cl("job list --status failed,"), ctx: "live", code: 2, want: `unknown --status ""`},
	}
	// IDs that cannot be one, and IDs of nothing.
	for _, sub := range []string{"show", "cancel", "trace", "replay", "script"} {
		for _, id := range []string{"", "job_", "job_X", "../../secrets", "job_a/../b", "\xff", strings.Repeat("a", 100000)} {
			cases = append(cases, badCase{args: cl("job "+sub, id), ctx: "live", code: 2, want: "is not a job ID (they look like job_4k2vrsmq…); `oz0 job list` shows them"})
		}
		cases = append(cases, badCase{args: cl("job "+sub, noJob), ctx: "live", code: 2, want: "not found: job " + noJob + "; `oz0 job list` shows the jobs"})
	}
	for _, sub := range []string{"approve", "deny --reason no"} {
		for _, id := range []string{"", "apr_", "apr_A!", "job_aaaaaaaaaaaaaaaaaaaa", "\xff"} {
			cases = append(cases, badCase{args: cl("approval "+sub, id), ctx: "live", code: 2, want: "is not an approval ID (they look like apr_4k2vrsmq…); `oz0 approval list` shows them"})
		}
		cases = append(cases, badCase{args: cl("approval "+sub, noApproval), ctx: "live", code: 2, want: "not found: approval " + noApproval + "; `oz0 approval list --all` shows the approvals"})
	}
	for _, rule := range []string{"", "rule_", "rule_!", "nodot", "a b.c", ".tool", "harness.", "\xff.x"} {
		cases = append(cases, badCase{args: cl("approval revoke", rule), ctx: "live", code: 2, want: "is neither a rule ID (rule_…) nor the <harness>.<tool> of a rule; `oz0 approval rules` shows them"})
	}
	cases = append(cases,
		badCase{args: cl("approval revoke", noRule), ctx: "live", code: 2, want: "not found: rule " + noRule + "; `oz0 approval rules` shows the rules"},
		badCase{args: cl("approval revoke hello.nothing"), ctx: "live", code: 2, want: "not found: rule hello.nothing; `oz0 approval rules` shows the rules"},
	)
	if os.Geteuid() != 0 { // root reads any directory
		os.Mkdir(in("locked"), 0o000)
		cases = append(cases,
			badCase{args: cl("plugin lint locked"), code: 3, want: "locked: permission denied"},
			badCase{args: cl("dev --plugin locked"), code: 3, want: "locked: permission denied"},
			badCase{args: cl("run hello --input-file locked/x"), ctx: "live", code: 3, want: "cannot read --input-file locked/x: permission denied"},
		)
	}
	return cases
}

// TestBadInput runs every command of the tree with bad input of every kind (treeCases, pathCases)
// and checks each answer: the exit code, exactly one line on stderr that says what is wrong (no
// Go error chain, no usage dump) and nothing on stdout, and nothing written: the working
// directory's files and the live dev server's jobs, secrets, approvals and rules are as before.
func TestBadInput(t *testing.T) {
	fx := newBadFixtures(t)
	ios, _, _, _ := iostreams.Test()
	root := newCmdRoot(&cmdutil.Factory{IOStreams: ios, Getwd: os.Getwd, Getenv: func(string) string { return "" }})
	root.InitDefaultHelpCmd()
	cases, pathFlags := treeCases(t, root)
	paths := pathCases(fx)
	cases = append(cases, paths...)

	// Every flag of a path has a case of its own.
	for _, c := range paths {
		cmd, _, err := root.Find(c.args)
		if err != nil {
			continue
		}
		for _, a := range c.args {
			if name, ok := strings.CutPrefix(a, "--"); ok {
				delete(pathFlags, cmd.CommandPath()+" --"+name)
			} else if short, ok := strings.CutPrefix(a, "-"); ok && len(short) == 1 {
				if fl := cmd.Flags().ShorthandLookup(short); fl != nil {
					delete(pathFlags, cmd.CommandPath()+" --"+fl.Name)
				}
			}
		}
	}
	for flag := range pathFlags {
		if pathFlagsElsewhere[flag] == "" {
			t.Errorf("%s has no bad-input case: add one to pathCases (a path), flagBadValues (a value it refuses) or freeFlags", flag)
		}
	}

	tree, server := treeState(t, fx.dir), fx.serverState(t)
	commands := map[string]bool{}
	for _, c := range cases {
		if cmd, _, err := root.Find(c.args); err == nil {
			commands[cmd.CommandPath()] = true
		}
		code, stdout, stderr := runOz0(t, fx.dir, fx.contexts[c.ctx], c.stdin, c.args...)
		line, _ := strings.CutSuffix(stderr, "\n")
		switch {
		case code != c.code:
			t.Errorf("%s: exit %d, want %d\nstderr: %.400s", c, code, c.code, stderr)
		case strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "oz0: "):
			t.Errorf("%s: stderr is not one line:\n%.2000s", c, stderr)
		case !strings.Contains(line, c.want):
			t.Errorf("%s: stderr does not say %q:\n%s", c, c.want, line)
		case chained.MatchString(line):
			t.Errorf("%s: stderr has a Go error chain (%q):\n%s", c, chained.FindString(line), line)
		case utf8.RuneCountInString(line) > 400:
			t.Errorf("%s: stderr is %d characters long:\n%.600s", c, utf8.RuneCountInString(line), line)
		case stdout != "":
			t.Errorf("%s: printed on stdout:\n%.400s", c, stdout)
		}
		if now := treeState(t, fx.dir); now != tree {
			t.Errorf("%s: the working directory changed:\n%s", c, lineDiff(tree, now))
			tree = now
		}
		if now := fx.serverState(t); now != server {
			t.Errorf("%s: the dev server changed: %s\nwas: %s", c, now, server)
			server = now
		}
	}
	t.Logf("%d cases over %d commands: %d from the tree, %d of paths, input and IDs", len(cases), len(commands), len(cases)-len(paths), len(paths))
}
