package diag

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/orchestrator-zero/oz0/internal/jsonutil"
	"github.com/orchestrator-zero/oz0/internal/termtext"
)

// The output formats of Write.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatSARIF  = "sarif"
	FormatGitHub = "github"
)

// Formats are the output formats of Write, the first the default.
var Formats = []string{FormatText, FormatJSON, FormatSARIF, FormatGitHub}

// Tool is what SARIF says of the tool that found the problems: oz0's version ("" means "dev"),
// and the git ref whose docs/lint-rules.md the rules' helpUri links to (a release's tag; ""
// means main).
type Tool struct {
	Version string
	Ref     string
}

// Write writes rep to w in format (one of Formats):
//
//   - text: "path:line:col: severity rule message" per finding ("path:
//     severity rule message" for one about a whole file), then a summary
//     line: "2 errors, 1 warning", "1 warning", or "no problems".
//   - json: one JSON array of the findings, each an object with file,
//     line, col, end_line, end_col, severity, rule, message and fix; [] when
//     there are none.
//   - sarif: one SARIF 2.1.0 log with one run, every rule in
//     tool.driver.rules and a result per finding. Columns are Unicode code
//     points (columnKind); a relative path is a URI relative to %SRCROOT%.
//   - github: GitHub Actions workflow commands (::error / ::warning), one
//     per finding, which GitHub shows as annotations.
//
// Paths are Report.Path: the plugin directory joined with the file. For
// sarif and github they should be relative to the repository's root, as
// code scanning and annotations read them; the caller makes them so.
func Write(w io.Writer, rep *Report, format string, tool Tool) error {
	bw := bufio.NewWriter(w)
	var err error
	switch format {
	case FormatText, "":
		err = writeText(bw, rep)
	case FormatJSON:
		err = writeJSON(bw, rep)
	case FormatSARIF:
		err = writeSARIF(bw, rep, tool)
	case FormatGitHub:
		err = writeGitHub(bw, rep)
	default:
		return fmt.Errorf("unknown format %q; use one of %s", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func writeText(w io.Writer, rep *Report) error {
	for _, d := range rep.Diagnostics {
		if _, err := io.WriteString(w, textLine(rep, d)+"\n"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, Summary(rep))
	return err
}

// textLine is one diagnostic of the text format, without its newline.
func textLine(rep *Report, d Diagnostic) string {
	if d.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s %s %s", termtext.OneLine(rep.Path(d)), d.Line, max(d.Col, 1), d.Severity, d.Rule, termtext.OneLine(d.Message))
	}
	return fmt.Sprintf("%s: %s %s %s", termtext.OneLine(rep.Path(d)), d.Severity, d.Rule, termtext.OneLine(d.Message))
}

func writeJSON(w io.Writer, rep *Report) error {
	list := make([]Diagnostic, len(rep.Diagnostics))
	for i, d := range rep.Diagnostics {
		d.File = rep.Path(d)
		list[i] = d
	}
	return jsonutil.NewEncoder(w).Encode(list)
}

// escapeData and escapeProperty follow GitHub's workflow command escaping
// (@actions/core's command.ts).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

func writeGitHub(w io.Writer, rep *Report) error {
	for _, d := range rep.Diagnostics {
		cmd := "error"
		if d.Severity == Warning {
			cmd = "warning"
		}
		props := []string{"file=" + escapeProperty(rep.Path(d))}
		if d.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", d.Line), fmt.Sprintf("col=%d", max(d.Col, 1)))
			if d.EndLine > 0 {
				props = append(props, fmt.Sprintf("endLine=%d", d.EndLine), fmt.Sprintf("endColumn=%d", d.EndCol))
			}
		}
		props = append(props, "title="+escapeProperty(d.Rule.String()))
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", cmd, strings.Join(props, ","), escapeData(d.Message)); err != nil {
			return err
		}
	}
	return nil
}

// SARIF 2.1.0, the parts oz0 writes.

// SARIFSchema is the $schema of the SARIF output.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string        `json:"id"`
	Name                 string        `json:"name"`
	ShortDescription     sarifText     `json:"shortDescription"`
	FullDescription      sarifText     `json:"fullDescription"`
	Help                 sarifText     `json:"help"`
	HelpURI              string        `json:"helpUri"`
	DefaultConfiguration sarifRuleConf `json:"defaultConfiguration"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

// srcRoot is the base of the relative URIs: the repository's root, where code scanning checks
// the files out.
const srcRoot = "%SRCROOT%"

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
	EndLine     int `json:"endLine,omitempty"`
	EndColumn   int `json:"endColumn,omitempty"`
}

// InformationURI is the tool's home in SARIF output.
const InformationURI = "https://github.com/orchestrator-zero/oz0"

func sarifLevel(s Severity) string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

func writeSARIF(w io.Writer, rep *Report, tool Tool) error {
	version := tool.Version
	if version == "" {
		version = "dev"
	}
	driver := sarifDriver{Name: "oz0", InformationURI: InformationURI, Version: version}
	for _, r := range Rules {
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   r.ID.String(),
			Name:                 ruleName(r.ID.String()),
			ShortDescription:     sarifText{Text: r.Short},
			FullDescription:      sarifText{Text: r.Help},
			Help:                 sarifText{Text: r.Help + " Fix: " + r.Fix, Markdown: fmt.Sprintf("%s\n\n**Fix:** %s\n\n[%s](%s)", r.Help, r.Fix, r.ID, r.HelpURL(tool.Ref))},
			HelpURI:              r.HelpURL(tool.Ref),
			DefaultConfiguration: sarifRuleConf{Level: sarifLevel(r.Severity)},
		})
	}
	results := make([]sarifResult, 0, len(rep.Diagnostics))
	for _, d := range rep.Diagnostics {
		phys := sarifPhysical{ArtifactLocation: sarifArtifactAt(rep.Path(d))}
		if d.Line > 0 {
			phys.Region = &sarifRegion{StartLine: d.Line, StartColumn: max(d.Col, 1), EndLine: d.EndLine, EndColumn: d.EndCol}
		}
		msg := d.Message
		if d.Fix != "" {
			msg += " Fix: " + d.Fix
		}
		results = append(results, sarifResult{
			RuleID:    d.Rule.String(),
			RuleIndex: int(d.Rule) - 1, // Rules is in the constants' order; -1 is SARIF's "no rule"
			Level:     sarifLevel(d.Severity),
			Message:   sarifText{Text: msg},
			Locations: []sarifLocation{{PhysicalLocation: phys}},
		})
	}
	log := sarifLog{
		Schema:  SARIFSchema,
		Version: "2.1.0",
		// The columns are yaml.v3's and schemas.End's, which count code points.
		Runs: []sarifRun{{Tool: sarifTool{Driver: driver}, ColumnKind: "unicodeCodePoints", Results: results}},
	}
	enc := jsonutil.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// ruleName makes a SARIF rule name (PascalCase) of a rule ID.
func ruleName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// sarifArtifactAt is the location of the file at path p: a URI relative to %SRCROOT% for a
// relative path, a file URI for an absolute one.
func sarifArtifactAt(p string) sarifArtifact {
	if path.IsAbs(p) {
		return sarifArtifact{URI: (&url.URL{Scheme: "file", Path: p}).String()}
	}
	return sarifArtifact{URI: (&url.URL{Path: p}).String(), URIBaseID: srcRoot}
}
