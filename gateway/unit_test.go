package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestRewriteRequest(t *testing.T) {
	models := map[string]string{"alias": "real-model", "same": "same"}
	for _, tc := range []struct {
		name     string
		face     Format
		in, want string
		info     reqInfo
	}{
		{"anthropic untouched", AnthropicMessages, `{"model":"m","stream":true}`, `{"model":"m","stream":true}`, reqInfo{model: "m", stream: true}},
		{"openai no stream untouched", OpenAIChat, `{"model":"m"}`, `{"model":"m"}`, reqInfo{model: "m"}},
		{"openai stream: include_usage added", OpenAIChat, ` { "model":"m","stream":true}`, ` {"stream_options":{"include_usage":true}, "model":"m","stream":true}`, reqInfo{model: "m", stream: true, injected: true}},
		{"openai stream_options null", OpenAIChat, `{"stream":true,"stream_options":null}`, `{"stream":true,"stream_options":{"include_usage":true}}`, reqInfo{stream: true, injected: true}},
		{"openai stream_options empty", OpenAIChat, `{"stream":true,"stream_options":{ }}`, `{"stream":true,"stream_options":{"include_usage":true }}`, reqInfo{stream: true, injected: true}},
		{"openai stream_options other", OpenAIChat, `{"stream":true,"stream_options":{"include_obfuscation":false}}`, `{"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`, reqInfo{stream: true, injected: true}},
		{"openai include_usage false", OpenAIChat, `{"stream":true,"stream_options":{"include_usage":false}}`, `{"stream":true,"stream_options":{"include_usage":true}}`, reqInfo{stream: true, injected: true}},
		{"openai include_usage asked", OpenAIChat, `{"stream":true,"stream_options":{"include_usage":true}}`, `{"stream":true,"stream_options":{"include_usage":true}}`, reqInfo{stream: true}},
		{"stream false", OpenAIChat, `{"stream":false}`, `{"stream":false}`, reqInfo{}},
		{"model mapped", AnthropicMessages, `{"a":[1,{"model":"alias"}],"model":"alias","b":"x"}`, `{"a":[1,{"model":"alias"}],"model":"real-model","b":"x"}`, reqInfo{model: "alias", upstreamModel: "real-model"}},
		{"model mapped and stream", OpenAIChat, `{"model":"alias","stream":true}`, `{"stream_options":{"include_usage":true},"model":"real-model","stream":true}`, reqInfo{model: "alias", upstreamModel: "real-model", stream: true, injected: true}},
		{"model mapped to itself", AnthropicMessages, `{"model":"same"}`, `{"model":"same"}`, reqInfo{model: "same"}},
		{"escaped key and value", AnthropicMessages, `{"mo\u0064el":"al\u0069as"}`, `{"mo\u0064el":"real-model"}`, reqInfo{model: "alias", upstreamModel: "real-model"}},
		{"not JSON", OpenAIChat, `{"stream":true,`, `{"stream":true,`, reqInfo{}},
		{"not an object", OpenAIChat, `[{"stream":true}]`, `[{"stream":true}]`, reqInfo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, info := rewriteRequest([]byte(tc.in), tc.face, models)
			if string(got) != tc.want || info != tc.info {
				t.Errorf("got %s %+v\nwant %s %+v", got, info, tc.want, tc.info)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid(got) {
				t.Errorf("the rewrite is not JSON: %s", got)
			}
		})
	}
}

// FuzzTopLevel checks the scanner against encoding/json: on a valid object it finds exactly the
// members json finds, with the same values.
func FuzzTopLevel(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"x\"}","b":[1,{"c":"]"}],"d":null,"e":true}`, ` { "k" : { "n" : [ ] } } `, `{"a":1,}`, `{"a"}`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		jerr := json.Unmarshal(data, &want)
		got := map[string]json.RawMessage{}
		err := topLevel(data, func(m member) bool {
			var k string
			json.Unmarshal(append(append([]byte{'"'}, m.key...), '"'), &k)
			got[k] = json.RawMessage(data[m.start:m.end])
			return true
		})
		if jerr != nil || want == nil {
			return // the scanner may accept what json rejects: the upstream judges
		}
		if err != nil {
			t.Fatalf("topLevel failed on valid JSON %q: %v", data, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: got %d members, want %d", data, len(got), len(want))
		}
		for k, v := range want {
			var a, b any
			json.Unmarshal(v, &a)
			json.Unmarshal(got[k], &b)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("%q: member %q = %s, want %s", data, k, got[k], v)
			}
		}
	})
}

func TestResponseUsage(t *testing.T) {
	a := responseUsage([]byte(`{"id":"x","content":[{"type":"text","text":"\"usage\":{}"}],"usage":{"input_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":9,"server_tool_use":null}}`), AnthropicMessages)
	if a != (Usage{5, 9, 3, 2}) {
		t.Errorf("anthropic %+v", a)
	}
	o := responseUsage([]byte(`{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"total_tokens":59,"prompt_tokens_details":{"cached_tokens":20}}}`), OpenAIChat)
	if o != (Usage{30, 9, 20, 0}) {
		t.Errorf("openai %+v", o)
	}
}

func TestSSEParserSplitsAndStrips(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\r\n\r\n" +
		"data: [DONE]\n\n"
	for split := 1; split <= len(stream); split += 7 {
		p := &sseParser{face: OpenAIChat, strip: true}
		var out []byte
		for i := 0; i < len(stream); i += split {
			out = append(out, p.feed([]byte(stream[i:min(i+split, len(stream))]))...)
		}
		out = append(out, p.rest()...)
		want := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: [DONE]\n\n"
		if string(out) != want || p.usage != (Usage{InputTokens: 7, OutputTokens: 3}) || !p.done {
			t.Fatalf("split %d: %q %+v", split, out, p.usage)
		}
	}
}

func TestResolveModel(t *testing.T) {
	records := []Record{
		{Name: "anthropic", Formats: []Format{AnthropicMessages}},
		{Name: "openai", Formats: []Format{OpenAIChat}},
		FakeRecord("http://127.0.0.1:9"),
	}
	for _, tc := range []struct {
		name    string
		use     string
		formats []Format
		record  string
		format  Format
		err     string
	}{
		{"default for anthropic", "default", []Format{AnthropicMessages}, "anthropic", AnthropicMessages, ""},
		{"empty is default", "", []Format{OpenAIChat}, "openai", OpenAIChat, ""},
		{"default with either format", "default", []Format{OpenAIChat, AnthropicMessages}, "anthropic", AnthropicMessages, ""},
		{"named record", "fake", []Format{OpenAIChat, AnthropicMessages}, "fake", OpenAIChat, ""},
		{"record of another format", "openai", []Format{AnthropicMessages}, "", "", "the record openai takes openai-chat, and the harness speaks anthropic-messages"},
		{"unknown record", "nope", []Format{AnthropicMessages}, "", "", "there is no model record or alias nope (the alias: default; the records: anthropic, openai, fake)"},
		{"no formats", "default", nil, "", "", "lists no formats"},
		{"unknown format", "default", []Format{"gemini"}, "", "", "no provider record takes gemini"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, f, err := ResolveModel(records, tc.use, tc.formats)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("%s %v: error %v, want %q", tc.use, tc.formats, err, tc.err)
				}
			case err != nil || r.Name != tc.record || f != tc.format:
				t.Errorf("%s %v: %v %s %v", tc.use, tc.formats, r, f, err)
			}
		})
	}
	if _, _, err := ResolveModel(nil, "default", []Format{AnthropicMessages}); err == nil || !strings.Contains(err.Error(), "records: none") {
		t.Errorf("no records: %v", err)
	}
	fr := FakeRecord("http://h:1/")
	if fr.BaseURL(AnthropicMessages) != "http://h:1" || fr.BaseURL(OpenAIChat) != "http://h:1/v1" {
		t.Errorf("fake base URLs %q %q", fr.BaseURL(AnthropicMessages), fr.BaseURL(OpenAIChat))
	}
	var plain Record
	if plain.BaseURL(AnthropicMessages) != DefaultAnthropicBaseURL || plain.BaseURL(OpenAIChat) != DefaultOpenAIBaseURL {
		t.Error("default base URLs")
	}
}

func TestMemResolver(t *testing.T) {
	m := NewMemResolver()
	ctx := context.Background()
	var wg sync.WaitGroup
	keys := make([]string, 100)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job := "job_a"
			if i%2 == 1 {
				job = "job_b"
			}
			keys[i] = m.Issue(Grant{Job: job, Agent: "x"})
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, KeyPrefix) || len(k) != len(KeyPrefix)+40 || seen[k] {
			t.Fatalf("key %q", k)
		}
		seen[k] = true
		if g, err := m.Resolve(ctx, k); err != nil || g.Agent != "x" {
			t.Fatalf("Resolve: %v", err)
		}
	}
	if !m.Revoke(keys[0]) || m.Revoke(keys[0]) {
		t.Error("Revoke")
	}
	if _, err := m.Resolve(ctx, keys[0]); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("revoked key: %v", err)
	}
	if n := m.RevokeJob("job_b"); n != 50 {
		t.Errorf("RevokeJob revoked %d", n)
	}
	if _, err := m.Resolve(ctx, keys[1]); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("job_b key: %v", err)
	}
	if _, err := m.Resolve(ctx, keys[2]); err != nil {
		t.Errorf("job_a key: %v", err)
	}
}

func TestPricesCost(t *testing.T) {
	p := &Prices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if c := p.Cost(Usage{1_000_000, 1_000_000, 1_000_000, 1_000_000}); c != 22.05 {
		t.Errorf("cost %v", c)
	}
	var none *Prices
	if none.Cost(Usage{InputTokens: 5}) != 0 {
		t.Error("nil prices")
	}
}

// FuzzRewriteRequest: the request as it goes upstream, for both faces. Never a panic; the body
// sent (the segments, as the transport reads them) is the edited body; and on a JSON object with
// no member twice, the result is a JSON object whose members are the client's but for a mapped
// model and, on an OpenAI stream, include_usage asked for.
func FuzzRewriteRequest(f *testing.F) {
	for _, s := range []string{`{"model":"alias","stream":true}`, `{"model":"m","stream":true,"stream_options":null}`,
		`{"stream":true,"stream_options":{ }}`, `{"stream":true,"stream_options":{"include_usage":false,"x":1}}`,
		` { "model" : "alias" , "messages" : [ {"model":"alias"} ] } `, `{"stream":true,"stream_options":7}`, `[1]`, `{"a"`} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	models := map[string]string{"alias": "real-model"}
	f.Fuzz(func(t *testing.T, body []byte, openai bool) {
		face := AnthropicMessages
		if openai {
			face = OpenAIChat
		}
		edits, info := planRequest(body, face, models)
		out := applyEdits(body, edits)
		if u := newUpstreamBody(body, edits); u != nil {
			r, err := u.open()
			if err != nil {
				t.Fatal(err)
			}
			sent, _ := io.ReadAll(r)
			if !bytes.Equal(sent, out) {
				t.Fatalf("%q: the upstream gets %q, the edits make %q", body, sent, out)
			}
		}
		var in map[string]any
		if json.Unmarshal(body, &in) != nil || in == nil {
			return
		}
		members := 0
		topLevel(body, func(member) bool { members++; return true })
		if members != len(in) {
			return // a member twice: which one an upstream reads is its own affair
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q became %q, not a JSON object: %v", body, out, err)
		}
		want := maps.Clone(in)
		if m, ok := in["model"].(string); ok && models[m] != "" {
			want["model"] = models[m]
		}
		if openai && in["stream"] == true {
			switch so := in["stream_options"].(type) {
			case nil:
				want["stream_options"] = map[string]any{"include_usage": true}
			case map[string]any:
				so = maps.Clone(so)
				so["include_usage"] = true
				want["stream_options"] = so
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q became %q\nwant the members %v", body, out, want)
		}
		if info.stream != (in["stream"] == true) {
			t.Fatalf("%q: stream %v", body, info.stream)
		}
	})
}
