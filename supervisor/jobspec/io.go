package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/plugin"
)

// InputError is a job input that the agent does not take.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ParseInput turns the user's input into the job's: a JSON string for an agent that takes text
// (and for a nil agent); for an agent that takes JSON, the parsed value, compacted and checked
// against its input schema. Input the agent does not take, or over apiv1.MaxInput, is an
// *InputError.
func ParseInput(a *plugin.Agent, input string) (Input, error) {
	// The session request carries the input twice on one line: one limit keeps it within.
	if msg := apiv1.InputTooLarge("the input", input); msg != "" {
		return Input{}, &InputError{Msg: msg}
	}
	if a == nil || a.Input.Kind != "json" {
		return TextInput(input), nil
	}
	// encoding/json checks the whole input first, so every syntax error, a truncated or a
	// trailing one too, comes with its offset.
	if err := json.Unmarshal([]byte(input), new(json.RawMessage)); err != nil {
		return Input{}, &InputError{Msg: fmt.Sprintf("agent %s takes JSON input, and this is not JSON: %s", a.Name, jsonErrorAt(input, err))}
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(input))
	if err != nil {
		return Input{}, &InputError{Msg: fmt.Sprintf("agent %s takes JSON input, and this is not JSON: %v", a.Name, err)}
	}
	if sch := a.Input.Compiled; sch != nil {
		if err := sch.Validate(v); err != nil {
			return Input{}, &InputError{Msg: fmt.Sprintf("the input does not match agent %s's input schema: %s", a.Name, schemaError(err))}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(input)); err != nil {
		return Input{}, &InputError{Msg: err.Error()}
	}
	return Input{Text: input, JSON: buf.Bytes()}, nil
}

// CheckOutput checks a session's result against the agent's output schema; "" when it passes (or
// the agent has none).
func CheckOutput(a *plugin.Agent, output json.RawMessage) string {
	if a == nil || a.Output.Kind != "json" || a.Output.Compiled == nil {
		return ""
	}
	sch := a.Output.Compiled
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(output))
	if err != nil {
		return "the result is not JSON: " + err.Error()
	}
	if err := sch.Validate(v); err != nil {
		return "the result does not match the agent's output schema: " + schemaError(err)
	}
	return ""
}

// jsonErrorAt names the line and column of a JSON syntax error: of the character that is wrong,
// or, when the input ends too soon, just past its end.
func jsonErrorAt(input string, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	if strings.TrimSpace(input) == "" {
		return "the input is empty"
	}
	at := int(se.Offset) - 1 // the offset counts the wrong character
	if strings.HasSuffix(se.Error(), "end of JSON input") {
		at = len(strings.TrimRight(input, " \t\r\n"))
	}
	at = max(0, min(at, len(input)))
	line, col := 1, 1
	for _, r := range input[:at] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %s", line, col, se.Error())
}

// schemaError is a validation error in one line: each leaf at its JSON pointer, at most five.
func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}

var printer = message.NewPrinter(language.English)
