package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// goreleaserSchema is `goreleaser jsonschema` of the goreleaser the Makefile pins (GORELEASER),
// committed so that the suite checks .goreleaser.yaml without building goreleaser, which takes
// minutes on a fresh machine; `make check-release` runs goreleaser's own check. Regenerate it
// when the pin moves: go run $(GORELEASER) jsonschema -o cmd/oz0/testdata/goreleaser-vX.schema.json
const goreleaserSchema = "testdata/goreleaser-v2.15.1.schema.json"

func TestReleaseConfigMatchesGoreleasersSchema(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	pin := strings.TrimSuffix(strings.TrimPrefix(goreleaserSchema, "testdata/goreleaser-"), ".schema.json")
	if !bytes.Contains(makefile, []byte("goreleaser/v2@"+pin+"\n")) {
		t.Fatalf("the Makefile's GORELEASER is not %s: regenerate %s for its version", pin, goreleaserSchema)
	}
	schema := compileGoreleaserSchema(t)
	config, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(yamlToJSONValue(t, config)); err != nil {
		t.Errorf(".goreleaser.yaml: %v", err)
	}
	// The check can fail: a misspelt key is refused.
	typo := bytes.Replace(config, []byte("\nbuilds:"), []byte("\nbuild:"), 1)
	if err := schema.Validate(yamlToJSONValue(t, typo)); err == nil {
		t.Error("a .goreleaser.yaml with build: for builds: passes the schema")
	}
}

func compileGoreleaserSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(goreleaserSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("goreleaser.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("goreleaser.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlToJSONValue decodes YAML into the values jsonschema validates (JSON's, numbers included).
func yamlToJSONValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
