package eval

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
	"github.com/orchestrator-zero/oz0/plugin"
)

// Load reads and checks the eval files of plugin p at paths, each named in findings and reports
// as shown says (oz0 eval: as the user named it; the dev UI: relative to the plugin). A file with
// findings (its schema's, an agent the plugin lacks) is in the report and not among the files:
// oz0 eval and the dev UI run nothing while the report has errors. An error is a file that
// cannot be read.
func Load(p *plugin.Plugin, paths, shown []string) ([]*File, *diag.Report, error) {
	rep := &diag.Report{}
	var files []*File
	for i, path := range paths {
		name := shown[i]
		data, ds, err := evalfile.Read(path, name)
		if err != nil {
			return nil, nil, err
		}
		if len(ds) > 0 {
			rep.Add(ds...)
			continue
		}
		ef, ds := evalfile.Parse(name, data)
		rep.Add(ds...)
		if ef == nil || len(ds) > 0 {
			continue
		}
		if p.Agent(ef.Agent) == nil {
			rep.Add(diag.Diagnostic{File: name, Line: ef.AgentLine, Col: ef.AgentCol, Severity: diag.Error, Rule: evalfile.Rule,
				Message: fmt.Sprintf("the plugin has no agent `%s`; its agents are %s", ef.Agent, strings.Join(p.AgentNames(), ", "))})
			continue
		}
		files = append(files, &File{File: ef, Path: path, Dir: filepath.Dir(path)})
	}
	return files, rep, nil
}

// Only keeps, of files, the file named shown (a name as Load gave it), and of it the case named
// name ("" all its cases): one file, or one case, run alone. nil when there is no such file or
// case.
func Only(files []*File, shown, name string) []*File {
	for _, f := range files {
		if f.Name != shown {
			continue
		}
		if name == "" {
			return []*File{f}
		}
		for _, c := range f.Cases {
			if c.Name == name {
				one := *f.File
				one.Cases = []*evalfile.Case{c}
				return []*File{{File: &one, Path: f.Path, Dir: f.Dir}}
			}
		}
	}
	return nil
}
