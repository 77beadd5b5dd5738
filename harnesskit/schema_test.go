package harnesskit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/orchestrator-zero/oz0/harnesskit"
	"github.com/orchestrator-zero/oz0/internal/testbin"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/schemas"
)

const protocolDoc = "../docs/protocol.md"

func validate(t testing.TB, schema string, v any) error {
	t.Helper()
	s, err := schemas.Compile(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

func unmarshal(t testing.TB, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return v
}

// Every example in docs/protocol.md is one line, a message valid against its schema and the
// harness's or node's union schema, which harnesskit decodes and encodes back the same.
func TestDocExamplesValidate(t *testing.T) {
	blocks := testbin.ProtocolBlocks(t, protocolDoc)
	seen := map[string]int{}
	for _, b := range blocks {
		if len(b.Lines) == 0 {
			t.Errorf("%s:%d: an empty ```json block", protocolDoc, b.Line)
		}
		for _, line := range b.Lines {
			where := fmt.Sprintf("%s:%d (%s)", protocolDoc, b.Line, b.Section)
			var probe struct{ Type string }
			if err := json.Unmarshal([]byte(line), &probe); err != nil {
				t.Errorf("%s: not a JSON object on one line: %v\n%s", where, err, line)
				continue
			}
			schema := harnesskit.SchemaFor(probe.Type)
			if schema == "" {
				t.Errorf("%s: unknown type %q", where, probe.Type)
				continue
			}
			seen[probe.Type]++
			v := unmarshal(t, []byte(line))
			if err := validate(t, schema, v); err != nil {
				t.Errorf("%s: not valid against %s: %v", where, schema, err)
			}
			union := harnesskit.SchemaHarnessMessage
			decode := harnesskit.DecodeHarnessMessage
			if probe.Type == harnesskit.TypeSession || probe.Type == harnesskit.TypePermission {
				union, decode = harnesskit.SchemaNodeMessage, harnesskit.DecodeNodeMessage
			}
			if err := validate(t, union, v); err != nil {
				t.Errorf("%s: not valid against %s: %v", where, union, err)
			}
			m, err := decode([]byte(line))
			if err != nil {
				t.Errorf("%s: harnesskit does not decode it: %v", where, err)
				continue
			}
			again, err := harnesskit.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, []byte(line), again) {
				t.Errorf("%s: decoded and encoded again it is\n%s\nnot\n%s", where, again, line)
			}
		}
	}
	for _, typ := range []string{"session", "permission", "say", "permission_request", "tool_result", "log", "result", "error"} {
		if seen[typ] == 0 {
			t.Errorf("%s has no example of %s", protocolDoc, typ)
		}
	}
}

func sameJSON(t testing.TB, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// The Go encoder's output validates, edge cases included.
func TestEncoderOutputValidates(t *testing.T) {
	msgs := []harnesskit.Message{
		harnesskit.SessionRequest{Protocol: 1, Job: "job_1", Agent: "a", Harness: "h", Workdir: "/w", StateDir: "/s",
			Model: harnesskit.Model{Format: plugin.FormatOpenAIChat}},
		harnesskit.SessionRequest{Protocol: 1, Job: "job_1", Agent: "a", Harness: "h", Text: "x", Input: json.RawMessage(`{"a":[1,2]}`),
			Tools: []string{"t1", "t.2"}, Limits: harnesskit.RequestLimits{MaxSteps: 3, TimeoutS: 0.25}, Workdir: "/w", StateDir: "/s",
			Options: json.RawMessage(`{"k":true}`), Model: harnesskit.Model{Name: "m", Format: plugin.FormatAnthropicMessages, Record: "r"}},
		harnesskit.Permission{ID: "p1", Allow: true},
		harnesskit.Permission{ID: "p1", Allow: true, Arguments: json.RawMessage(`{"a":"\u2028"}`)},
		harnesskit.Permission{ID: "p2", Reason: "no"},
		harnesskit.Say{},
		harnesskit.Say{Text: "line\nbreak \u2028 </script> \xff"},
		harnesskit.PermissionRequest{ID: "p1", Tool: "t"},
		harnesskit.PermissionRequest{ID: "p1", Tool: "t", Arguments: json.RawMessage(` { "x" : 1 } `)},
		harnesskit.ToolResult{ID: "p1", Tool: "t"},
		harnesskit.ToolResult{ID: "p1", Tool: "t", Result: json.RawMessage(`[1]`)},
		harnesskit.ToolResult{ID: "p1", Tool: "t", Error: "boom"},
		harnesskit.Log{Message: "m"},
		harnesskit.Log{Level: harnesskit.LevelWarning, Message: "m"},
		harnesskit.Result{},
		harnesskit.Result{Output: json.RawMessage(`"text"`)},
		harnesskit.Result{Output: json.RawMessage(`{"team":"billing"}`)},
		harnesskit.ErrorMessage{Message: "failed"},
	}
	var buf bytes.Buffer
	w := harnesskit.NewWriter(&buf)
	for _, m := range msgs {
		buf.Reset()
		if err := w.Encode(m); err != nil {
			t.Errorf("%T: %v", m, err)
			continue
		}
		line := buf.Bytes()
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Errorf("%T: not one line: %q", m, line)
		}
		if bytes.Contains(line, []byte("\u2028")) {
			t.Errorf("%T: U+2028 is not escaped: %q", m, line)
		}
		v := unmarshal(t, line)
		if err := validate(t, harnesskit.SchemaFor(m.MessageType()), v); err != nil {
			t.Errorf("%T %s: %v", m, line, err)
		}
	}
}

// The schemas refuse what the protocol does not allow.
func TestSchemasRefuse(t *testing.T) {
	for _, line := range []string{
		`{"type":"say"}`,
		`{"type":"say","text":"x","extra":1}`,
		`{"type":"say","text":5}`,
		`{"type":"permission_request","id":"p1","tool":"t"}`,
		`{"type":"permission_request","id":"","tool":"t","arguments":{}}`,
		`{"type":"permission_request","id":"p1","tool":"t","arguments":[1]}`,
		`{"type":"tool_result","id":"p1","tool":"t"}`,
		`{"type":"tool_result","id":"p1","tool":"t","result":1,"error":"e"}`,
		`{"type":"log","level":"loud","message":"m"}`,
		`{"type":"result"}`,
		`{"type":"error","message":""}`,
		`{"type":"mystery"}`,
		`{"text":"no type"}`,
	} {
		if err := validate(t, harnesskit.SchemaHarnessMessage, unmarshal(t, []byte(line))); err == nil {
			t.Errorf("%s: valid", line)
		}
	}
	for _, line := range []string{
		`{"type":"permission","id":"p1","decision":"allow"}`,
		`{"type":"permission","id":"p1","decision":"deny"}`,
		`{"type":"permission","id":"p1","decision":"allow","arguments":{},"reason":"r"}`,
		`{"type":"permission","id":"p1","decision":"maybe","reason":"r"}`,
		`{"type":"session","protocol":2,"job":"j","agent":"a","harness":"h","text":"","input":null,"instructions":"","model":{"name":"","format":"anthropic-messages","record":""},"tools":[],"limits":{"max_steps":0,"timeout_s":0},"workdir":"/w","state_dir":"/s","options":{}}`,
		`{"type":"session","protocol":1}`,
	} {
		if err := validate(t, harnesskit.SchemaNodeMessage, unmarshal(t, []byte(line))); err == nil {
			t.Errorf("%s: valid", line)
		}
	}
}

// The protocol's schemas are strict: every object with properties is closed and every property
// is described.
func TestProtocolSchemasAreStrict(t *testing.T) {
	for _, name := range []string{
		harnesskit.SchemaSession, harnesskit.SchemaPermission, harnesskit.SchemaSay, harnesskit.SchemaPermissionRequest,
		harnesskit.SchemaToolResult, harnesskit.SchemaLog, harnesskit.SchemaResult, harnesskit.SchemaError,
		harnesskit.SchemaHarnessMessage, harnesskit.SchemaNodeMessage,
	} {
		data, err := schemas.Read(name)
		if err != nil {
			t.Fatalf("%s is not embedded: %v", name, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc["$id"] != schemas.URL(name) || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $id %v $schema %v", name, doc["$id"], doc["$schema"])
		}
		checkStrict(t, name, "#", doc, name == harnesskit.SchemaHarnessMessage || name == harnesskit.SchemaNodeMessage)
	}
}

func checkStrict(t *testing.T, name, ptr string, v any, union bool) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			_, closed := v["additionalProperties"]
			_, unevaluated := v["unevaluatedProperties"]
			_, inBranch := v["const"] // a oneOf branch's discriminator
			isBranch := strings.Contains(ptr, "/oneOf/")
			if !closed && !unevaluated && !isBranch && !inBranch && !(union && ptr == "#") {
				t.Errorf("%s %s: an object schema that is not closed", name, ptr)
			}
			for k, p := range props {
				if d, _ := p.(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s %s/properties/%s: no description", name, ptr, k)
				}
			}
		}
		for k, x := range v {
			checkStrict(t, name, ptr+"/"+k, x, union)
		}
	case []any:
		for i, x := range v {
			checkStrict(t, name, fmt.Sprintf("%s/%d", ptr, i), x, union)
		}
	}
}
