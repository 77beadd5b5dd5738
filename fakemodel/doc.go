// Package fakemodel is oz0's fake model API: an http.Handler that speaks Anthropic's Messages API
// and OpenAI's Chat Completions API offline, answering from a script of rules.
//
// A Script is ordered rules; the first whose match fits a request answers it, with text, JSON, tool
// calls or an error, streamed (SSE) or not, in the provider's exact wire format. Everything is
// deterministic: the same script and the same requests give byte-identical responses (ids are
// hashes of the rule and the request body, timestamps are fixed). The server records every request
// it gets, so tests can check what a client or a gateway sent.
//
//	script, err := fakemodel.ParseScript("s.yaml", data) // or LoadScript(path), DefaultScript()
//	srv := fakemodel.New(script)
//	ts := httptest.NewServer(srv) // ANTHROPIC_BASE_URL=ts.URL, OPENAI_BASE_URL=ts.URL+"/v1"
//	...
//	for _, r := range srv.Requests() { ... }
//
// Routes, matched on the end of the path so the handler can be mounted under any prefix:
//
//	POST …/v1/messages               Anthropic Messages, streaming with "stream": true
//	POST …/v1/messages/count_tokens  Anthropic token counting
//	POST …/chat/completions          OpenAI Chat Completions (…/v1/chat/completions included)
//	GET  …/models, …/models/ID       Anthropic's shape when the request has an anthropic-version
//	                                 or x-api-key header, else OpenAI's
//
// The script format is described in docs/fake-model.md and by the JSON Schema
// schemas/fake-model-script.schema.json.
package fakemodel
