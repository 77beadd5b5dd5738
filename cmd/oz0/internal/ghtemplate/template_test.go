package ghtemplate

import (
	"bytes"
	"strings"
	"testing"
)

func render(t *testing.T, tmpl, input string) string {
	t.Helper()
	var out bytes.Buffer
	tp := New(&out, 80, false)
	if err := tp.Parse(tmpl); err != nil {
		t.Fatalf("Parse(%q): %v", tmpl, err)
	}
	if err := tp.Execute(strings.NewReader(input)); err != nil {
		t.Fatalf("Execute(%q): %v", tmpl, err)
	}
	if err := tp.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The sprig functions, with sprig's argument order (the string tested last, for pipelines).
func TestSprigFunctions(t *testing.T) {
	in := `{"id":"job_abc","tool":"notify_team"}`
	for tmpl, want := range map[string]string{
		`{{contains "notify" .tool}}`:               "true",
		`{{.tool | contains "lookup"}}`:             "false",
		`{{hasPrefix "job_" .id}}`:                  "true",
		`{{hasSuffix "_team" .tool}}`:               "true",
		`{{hasSuffix "job" .id}}`:                   "false",
		`{{regexMatch "^job_[a-z]+$" .id}}`:         "true",
		`{{regexMatch "(" .id}}`:                    "false", // a bad expression matches nothing, as in sprig
		`{{replace "_" "-" .tool}}`:                 "notify-team",
		`{{.tool | replace "notify" "tell"}}`:       "tell_team",
		`{{if hasPrefix "job" .id}}yes{{end}}`:      "yes",
		`{{truncate 6 .tool}}`:                      "not...",
		`{{join "," (pluck "id" .list)}}`:           "",
		`{{timefmt "2006" "2026-12-01T10:00:00Z"}}`: "2026",
	} {
		if got := render(t, tmpl, in); got != want {
			t.Errorf("%s = %q, want %q", tmpl, got, want)
		}
	}
}

// Numbers print as written: go-gh's float64 showed 2.5 as 2.50, and could not hold 1e999999.
func TestTableRows(t *testing.T) {
	got := render(t, `{{range .}}{{tablerow .id .n}}{{end}}`, `[{"id":"a","n":1},{"id":"bb","n":2.5},{"id":"c","n":1e999999}]`)
	if got != "a   1\nbb  2.5\nc   1e999999\n" {
		t.Fatalf("tablerow = %q", got)
	}
	if got := render(t, `{{.n}} {{join "," .l}}`, `{"n":12345678901234567891,"l":[1.10,-0e0]}`); got != "12345678901234567891 1.10,-0e0" {
		t.Errorf("numbers = %q", got)
	}
}
