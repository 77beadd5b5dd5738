package doctor

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/orchestrator-zero/oz0/api/discovery"
	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor"
	"github.com/orchestrator-zero/oz0/supervisor/pyimports"
	"github.com/orchestrator-zero/oz0/supervisor/sandbox"
)

// checkImports looks up what the plugin's Python harnesses import (pyimports: read, never run),
// in a session of the sandbox oz0 dev's sessions get by default: a framework that is not
// installed fails here, with where it is imported and the mend, rather than in the first job.
func checkImports(ctx context.Context, p *plugin.Plugin, env Env) Result {
	r := Result{Check: "imports"}
	if p == nil {
		r.Level, r.Detail = OK, "no plugin loaded, so no harness to import"
		return r
	}
	check := env.Sandbox
	if check == nil {
		check = sandbox.Check
	}
	tier := sandbox.None // where the default does not work, oz0 dev falls back to none
	if check(sandbox.Default) == nil {
		tier = sandbox.Default
	}
	// oz0 dev's state in the plugin (the default state directory, and any other under .oz0) is
	// hidden, as oz0 dev hides its own from its sessions.
	opts := pyimports.Options{Sandbox: supervisor.Sandbox{Tier: tier, Hide: []string{filepath.Dir(discovery.StateDir(p.Dir))}}}
	done, problem, err := pyimports.Check(ctx, p, opts)
	switch {
	case err != nil:
		r.Level, r.Detail, r.Mend = Fail, err.Error(), "check that the plugin's Python runs (oz0 doctor's python and venv checks)"
	case problem != nil:
		r.Level, r.Detail, r.Mend = Fail, problem.Error(), problem.Mend()
	case len(done) == 0:
		r.Level, r.Detail = OK, "no Python harness runs a module or a script to read"
	default:
		found := make([]string, len(done))
		for i, h := range done {
			found[i] = h.String()
		}
		r.Level, r.Detail = OK, "the harnesses' imports are installed: "+strings.Join(found, "; ")
	}
	return r
}
