package lint

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/lint/evalfile"
)

// lintEvals checks the plugin's eval files, evals/*.yaml, when it has an evals directory: each
// against its schema and evalfile's checks, and the agent it names against the plugin's.
func (l *linter) lintEvals() {
	st, err := fs.Stat(l.fsys, evalfile.Dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			l.unreadable(evalfile.Dir, err, func(rule diag.RuleID, msg string) { l.add(evalfile.Dir, 0, 0, rule, "%s", composed(msg)) })
		}
		return
	}
	if !st.IsDir() {
		return
	}
	entries, err := fs.ReadDir(l.fsys, evalfile.Dir)
	if err != nil {
		l.setFatal(err)
		return
	}
	for _, e := range entries {
		if !evalfile.IsFile(e) {
			continue
		}
		file := path.Join(evalfile.Dir, e.Name())
		data, st := l.read(file)
		if st != fileOK {
			continue
		}
		f, ds := evalfile.Parse(file, data)
		l.addProblems(file, ds, 0)
		if f != nil {
			for _, c := range f.Cases {
				msg := c.Absent(file)
				if msg == "" {
					continue
				}
				if _, err := fs.Stat(l.fsys, path.Join(evalfile.Dir, c.Path)); errors.Is(err, fs.ErrNotExist) {
					l.add(file, c.PathLine, c.PathCol, evalfile.Rule, "case %s: %s: %s", c.Name, c.PathKey, composed(msg))
				}
			}
		}
		if f != nil && f.Agent != "" && len(ds) == 0 && l.harnessesKnown {
			if _, ok := l.agents[f.Agent]; !ok {
				l.add(file, f.AgentLine, f.AgentCol, evalfile.Rule, "the plugin has no agent `%s`; its agents are %s", f.Agent, strings.Join(agentNames(l.agents), ", "))
			}
		}
	}
}

func agentNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
