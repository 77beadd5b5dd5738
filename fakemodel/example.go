package fakemodel

import (
	"encoding/json"
	"slices"
)

// exampleArguments makes a tool call's arguments from the tool's JSON Schema (an object schema,
// as decoded from the request): a value for each required property, or for every property when
// none is required, so that a call the built-in script makes fits any tool. A schema it cannot
// read gives {}.
func exampleArguments(schema any) json.RawMessage {
	v := exampleValue("", schema, 0)
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	b, err := marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// exampleValue is a value that the schema s takes, for a property called name.
func exampleValue(name string, s any, depth int) any {
	m, _ := s.(map[string]any)
	if m == nil || depth > 8 {
		return "example"
	}
	for _, k := range []string{"const", "default"} {
		if v, ok := m[k]; ok {
			return v
		}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return exampleValue(name, alts[0], depth+1)
		}
	}
	typ := m["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
	}
	switch typ {
	case "integer", "number":
		return json.Number("1")
	case "boolean":
		return true
	case "null":
		return nil
	case "array":
		return []any{exampleValue(name, m["items"], depth+1)}
	case "object":
		props, _ := m["properties"].(map[string]any)
		out := map[string]any{}
		var keys []string
		for _, r := range asStrings(m["required"]) {
			if _, ok := props[r]; ok || props == nil {
				keys = append(keys, r)
			}
		}
		if len(keys) == 0 {
			for k := range props {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			out[k] = exampleValue(k, props[k], depth+1)
		}
		return out
	}
	if _, ok := m["properties"]; ok {
		return exampleValue(name, map[string]any{"type": "object", "properties": m["properties"], "required": m["required"]}, depth+1)
	}
	if name == "" {
		return "example"
	}
	return "example " + name
}

func asStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
