package schemas

import (
	"bytes"
	"encoding/json"
	"errors"

	"gopkg.in/yaml.v3"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// JSON renders the YAML value under n as compact JSON with mapping keys in the order they are
// written, where ToValue's maps would sort them: a fake model script's tool arguments are sent as
// the author wrote them. Aliases and merge keys are followed as ToValue follows them, within
// DefaultLimits; a value ToValue reports (a key that is not a string, a number that is not
// finite) is an error here.
func JSON(n *yaml.Node) (json.RawMessage, error) {
	c := &converter{lim: DefaultLimits, active: map[*yaml.Node]bool{}}
	var b bytes.Buffer
	enc := jsonutil.NewEncoder(&b)
	if err := c.writeJSON(&b, enc, n, 0); err != nil {
		return nil, err
	}
	if c.fatal != nil {
		return nil, errors.New(c.fatal.Message)
	}
	if len(c.problems) > 0 {
		return nil, errors.New(c.problems[0].Message)
	}
	return b.Bytes(), nil
}

func (c *converter) writeJSON(b *bytes.Buffer, enc *json.Encoder, n *yaml.Node, depth int) error {
	if c.count(); c.nodes > c.lim.MaxNodes {
		return errors.New(c.tooMany())
	}
	if c.tooDeep(n, depth) {
		return errors.New(c.fatal.Message)
	}
	if n.Kind == yaml.AliasNode || n.Kind == yaml.DocumentNode {
		t := n.Alias
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				b.WriteString("null")
				return nil
			}
			t = n.Content[0]
		}
		if t == nil || c.active[t] {
			return errors.New("an alias that refers to a node that contains it")
		}
		c.active[t] = true
		defer delete(c.active, t)
		return c.writeJSON(b, enc, t, depth)
	}
	switch n.Kind {
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.writeJSON(b, enc, item, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case yaml.MappingNode:
		keys, vals, err := c.entries(n, depth)
		if err != nil {
			return err
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, enc, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := c.writeJSON(b, enc, vals[i], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		return encode(b, enc, c.scalar(n, ""))
	}
	return errors.New("an unknown kind of YAML node")
}

// entries lists a mapping's keys in order: its own, then those its merge keys (<<) bring in
// that it does not have, earlier sources first, as ToValue merges them.
func (c *converter) entries(n *yaml.Node, depth int) (keys []string, vals []*yaml.Node, err error) {
	seen := map[string]bool{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, v)
			continue
		}
		key, ok := c.key(k, depth, "")
		if !ok {
			return nil, nil, errors.New(c.problems[len(c.problems)-1].Message)
		}
		if !seen[key] {
			seen[key] = true
			keys, vals = append(keys, key), append(vals, v)
		}
	}
	for _, m := range merges {
		for _, src := range mergeSources(m) {
			// Each source counts toward the node budget, as ToValue counts it: merge keys that
			// pull in merge keys expand as aliases do.
			if c.count(); c.nodes > c.lim.MaxNodes {
				return nil, nil, errors.New(c.tooMany())
			}
			t := resolveAlias(src)
			if t == nil || t.Kind != yaml.MappingNode {
				return nil, nil, errors.New("a merge key (<<) takes a mapping or a list of mappings")
			}
			if c.active[t] {
				return nil, nil, errors.New("a merge key (<<) refers to a mapping that contains it")
			}
			c.active[t] = true
			ks, vs, err := c.entries(t, depth+1)
			delete(c.active, t)
			if err != nil {
				return nil, nil, err
			}
			for i, k := range ks {
				if !seen[k] {
					seen[k] = true
					keys, vals = append(keys, k), append(vals, vs[i])
				}
			}
		}
	}
	return keys, vals, nil
}

// encode writes v as JSON without escaping <, > and & (JSON does not need it, and a script's
// text is sent as written).
func encode(b *bytes.Buffer, enc *json.Encoder, v any) error {
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // the Encoder's newline
	return nil
}
