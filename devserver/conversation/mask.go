package conversation

import (
	"encoding/json"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/gateway"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// The store masks secrets in a kept call's bytes as they were sent, in the forms an encoder
// writes a value in (devserver/secrets). A request may escape any character, though
// ("sk\u002dant…"), and a conversation shows its texts decoded: so what a conversation shows is
// masked again once decoded (maskConversation), and its JSON texts (settings, a tool call's
// input, a schema) are shown canonical (jsonutil.Canonical: every string written as oz0 writes
// it; compact), so that masking finds a secret there too.

// maskConversation masks every text c shows.
func maskConversation(c *apiv1.Conversation, mask func([]byte) []byte) {
	if mask == nil {
		return
	}
	m := func(s *string) {
		if *s != "" {
			*s = string(mask([]byte(*s)))
		}
	}
	blocks := func(bs []apiv1.Block) {
		for i := range bs {
			m(&bs[i].Text)
			m(&bs[i].ID)
			m(&bs[i].Name)
			m(&bs[i].Input)
		}
	}
	m(&c.Model)
	m(&c.Settings)
	m(&c.System)
	for i := range c.Tools {
		t := &c.Tools[i]
		m(&t.Name)
		m(&t.Description)
		if len(t.Schema) > 0 {
			s := compact(t.Schema)
			m(&s)
			t.Schema = json.RawMessage(s)
		}
	}
	for i := range c.Messages {
		m(&c.Messages[i].Role)
		blocks(c.Messages[i].Blocks)
	}
	for i := range c.Notes {
		m(&c.Notes[i])
	}
	if a := c.Answer; a != nil {
		m(&a.Model)
		m(&a.StopReason)
		m(&a.Error)
		blocks(a.Blocks)
	}
}

// MaskExchange masks the secrets in a kept call's request and answer that only show once their
// strings are decoded: where the canonical text of the request or the (not streamed) answer
// holds a secret, it replaces the text as kept, masked; otherwise the text stays byte for byte as
// it was. Whatever reads the exchange afterwards (a raw view that indents it, a diff, a fake model
// script) then decodes no secret. mask is the secrets' masker; nil masks nothing. It reports
// whether it changed ex.
func MaskExchange(ex *gateway.Exchange, mask func([]byte) []byte) bool {
	changed := false
	for _, s := range []*string{&ex.Request, &ex.Body} {
		if m, ok := jsonutil.MaskDecoded([]byte(*s), mask); ok {
			*s, changed = string(m), true
		}
	}
	return changed
}
