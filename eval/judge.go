package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/orchestrator-zero/oz0/harnesskit/harness"
)

// The judge: a case's judge assertion (live only) asks a model a yes-or-no rubric question about
// the case's output. It runs as a job of its own, of the judge agent of a plugin oz0 eval makes
// (JudgePlugin: oz0 itself, with the Go harness SDK, as the harness), on the same node as the
// cases: its model call goes through the gateway under the job's key, metered as any call is, and
// its tokens and cost count in the case's.

// JudgeAgent is the judge plugin's agent.
const JudgeAgent = "oz0-eval-judge"

// JudgeCommand is the hidden oz0 command that is the judge's harness.
const JudgeCommand = "eval-judge-harness"

// judgeInstructions is the judge's system prompt.
const judgeInstructions = `You judge the output of an AI agent against a rubric question.
Read the question and the output in the user's message, then answer the question about the
output with yes or no. Answer with a JSON object and nothing else:
{"answer": "yes" or "no", "reason": "one sentence that says why"}`

// judgeInput is what a judge job takes.
type judgeInput struct {
	Question string `json:"question"`
	Output   string `json:"output"`
}

// JudgeVerdict is a judge job's output.
type JudgeVerdict struct {
	Answer string `json:"answer"` // yes or no
	Reason string `json:"reason"`
}

// JudgeHarness is the judge's harness: one model call with the question and the output, its
// answer read as a verdict.
func JudgeHarness(s *harness.Session) (any, error) {
	var in judgeInput
	if err := json.Unmarshal(s.Input(), &in); err != nil || in.Question == "" {
		return nil, fmt.Errorf("the judge takes {question, output}: %s", s.Input())
	}
	text, err := s.Complete(fmt.Sprintf("Question: %s\n\nThe output:\n<output>\n%s\n</output>", in.Question, in.Output))
	if err != nil {
		return nil, err
	}
	return parseVerdict(text)
}

// parseVerdict reads a model's answer as a verdict: the JSON object in it.
func parseVerdict(text string) (JudgeVerdict, error) {
	var v JudgeVerdict
	start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || end < start || json.Unmarshal([]byte(text[start:end+1]), &v) != nil {
		return v, fmt.Errorf("the judge's model did not answer with a JSON verdict: %.200q", text)
	}
	v.Answer = strings.ToLower(strings.TrimSpace(v.Answer))
	if v.Answer != "yes" && v.Answer != "no" {
		return v, fmt.Errorf("the judge's model answered %q, not yes or no", v.Answer)
	}
	return v, nil
}

// JudgePlugin writes the judge's plugin into dir: its manifest, agent and instructions, and the
// oz0 executable exe copied in as its harness's program (a session sees its plugin's files, not
// the rest of the machine's).
func JudgePlugin(dir, exe string) error {
	files := map[string]string{
		"oz0-plugin.yaml": `apiVersion: oz0/v1
name: ` + JudgeAgent + `
version: 0.1.0
description: "oz0 eval's judge: a yes-or-no rubric question about an output"
runtime: binary
harnesses:
  - name: ` + JudgeAgent + `
    command: ["./bin/oz0", "` + JudgeCommand + `"]
    permissions: false
    formats: [anthropic-messages]
agents: [agents/]
`,
		"agents/" + JudgeAgent + ".yaml": `name: ` + JudgeAgent + `
runtime: harness:` + JudgeAgent + `
instructions: prompts/judge.md
input: json
output: json
limits:
  max_steps: 1
`,
		"prompts/judge.md": judgeInstructions + "\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return copyExecutable(exe, filepath.Join(dir, "bin", "oz0"))
}

func copyExecutable(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// HasJudge reports whether a case of files has a judge assertion.
func HasJudge(files []*File) bool {
	for _, f := range files {
		for _, c := range f.Cases {
			for _, a := range c.Asserts {
				if a.Kind == "judge" {
					return true
				}
			}
		}
	}
	return false
}
