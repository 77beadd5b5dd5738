package doctor

import (
	"context"
	"strings"

	"github.com/orchestrator-zero/oz0/plugin"
	"github.com/orchestrator-zero/oz0/supervisor/pyimports"
)

// checkImports imports the modules of the plugin's Python harnesses as a session would run them:
// a framework that is not installed fails here, with the package and the mend, rather than in
// the first job.
func checkImports(ctx context.Context, p *plugin.Plugin) Result {
	r := Result{Check: "imports"}
	if p == nil {
		r.Level, r.Detail = OK, "no plugin loaded, so no harness to import"
		return r
	}
	done, problem, err := pyimports.Check(ctx, p)
	switch {
	case err != nil:
		r.Level, r.Detail, r.Mend = Fail, err.Error(), "check that the plugin's Python runs (oz0 doctor's python and venv checks)"
	case problem != nil:
		r.Level, r.Detail, r.Mend = Fail, problem.Error(), problem.Mend()
	case len(done) == 0:
		r.Level, r.Detail = OK, "no Python harness runs a module or a script to import"
	default:
		r.Level, r.Detail = OK, "the harnesses' modules import: "+strings.Join(done, "; ")
	}
	return r
}
