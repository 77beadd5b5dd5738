package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/orchestrator-zero/oz0/internal/atomicfile"
	"github.com/orchestrator-zero/oz0/internal/jsonutil"
)

// Recording is a case's recorded model calls, as oz0 eval --record writes them: the job they were
// recorded from (its id names the recording in a replay's diff), its agent, input, model record
// and model, and each call as the gateway kept it (gateway.Exchange's shape).
type Recording struct {
	Comment string `json:"//,omitempty"`
	Job     string `json:"job"`
	Agent   string `json:"agent"`
	Input   string `json:"input"`
	Record  string `json:"record"`
	Model   string `json:"model,omitempty"`
	// DurationMS is how long the case took when it was recorded: oz0 eval --shard balances the
	// shards by it.
	DurationMS int64             `json:"duration_ms,omitempty"`
	Calls      []json.RawMessage `json:"calls"`
}

// recordingComment says what the file is, in the file.
const recordingComment = "The model calls of an oz0 eval case, as oz0 eval --record recorded them; oz0 eval replays them offline. oz0 eval --update rewrites it."

// errNoRecording is readRecording's error for a recording that does not exist.
var errNoRecording = errors.New("no recording")

func readRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoRecording
	}
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("the recording %s is not one oz0 eval --record wrote: %v; record it again with oz0 eval --update", path, err)
	}
	if len(r.Calls) == 0 {
		return nil, fmt.Errorf("the recording %s has no model calls; record it again with oz0 eval --update", path)
	}
	return &r, nil
}

func writeRecording(path string, r *Recording) error {
	r.Comment = recordingComment
	var b bytes.Buffer
	enc := jsonutil.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes(), 0o644)
}
