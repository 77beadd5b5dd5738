package devserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/orchestrator-zero/oz0/diag"
	"github.com/orchestrator-zero/oz0/fakemodel"
	"github.com/orchestrator-zero/oz0/internal/termtext"
	"github.com/orchestrator-zero/oz0/lint"
	"github.com/orchestrator-zero/oz0/plugin"
)

// skipDirs are never part of a plugin's source: state, environments, caches.
var skipDirs = map[string]bool{".oz0": true, ".venv": true, ".git": true, "__pycache__": true, "node_modules": true, ".pytest_cache": true, ".ruff_cache": true, ".mypy_cache": true}

// fingerprint summarises a plugin's files (names, sizes, times), to notice an edit cheaply. The
// directory stateDir is skipped: a --state-dir inside the plugin changes with every job.
func fingerprint(dir, stateDir string) [32]byte {
	h := sha256.New()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".oz0") || p == stateDir) {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", p, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// fileStamp says when a file last changed: its size and time, "" when it does not exist.
func fileStamp(name string) string {
	info, err := os.Stat(name)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d\x00%d", info.Size(), info.ModTime().UnixNano())
}

// reloadHooks reads the hooks file again after an edit: a good one replaces the hooks in force
// (calls being evaluated finish with the old ones); one with problems keeps the last good hooks
// and says why.
func (s *Server) reloadHooks() {
	set, err := s.readHooks()
	// What stays in force: the last good hooks, or none when there never were any.
	kept := "kept the last good hooks"
	if s.hooks.Set().Len() == 0 {
		kept = "still no hooks"
	}
	var re *diag.ReportError
	switch {
	case errors.As(err, &re):
		s.outMu.Lock()
		fmt.Fprintf(s.out, "reload: %s: %s has %s\n", kept, s.hooksFile, problemsToFix(re.Report))
		_ = diag.Write(s.out, re.Report, diag.FormatText, diag.Tool{Version: s.cfg.Version})
		s.outMu.Unlock()
		return
	case err != nil:
		s.say("reload: %s: %v", kept, err)
		return
	}
	s.hooks.Replace(set)
	if set.Len() == 0 {
		s.say("reload: no hooks now (%s is gone or empty); new calls are decided by policy", s.hooksFile)
		return
	}
	s.say("reload: hooks reloaded from %s (%s: %s); new calls go through them", s.hooksFile, count(set.Len(), "hook", "hooks"), strings.Join(set.Names(), ", "))
}

// reloadFakeScript reads --fake-script's file again after an edit: a good script answers the
// model calls that come next (its rules' counts start again); one with problems keeps the last
// good script and says why.
func (s *Server) reloadFakeScript() {
	name := s.cfg.FakeScriptFile
	script, err := fakemodel.LoadScript(name)
	if err != nil {
		s.say("reload: kept the last good fake model script: %s", termtext.OneLine(err.Error()))
		return
	}
	s.fake.replace(script)
	s.say("reload: the fake model's script reloaded from %s (%s); new model calls are answered by it", name, count(len(script.Rules), "rule", "rules"))
}

// watch polls the plugins' files, the hooks file and the fake model's script; an edit re-lints and reloads the plugin. New jobs take the new
// version; running ones keep theirs. A broken edit keeps the last good version and says why.
// (A job also looks at the plugins' files as it is submitted: refreshBeforeJob.)
func (s *Server) watch() {
	defer close(s.watchDone)
	hooksPrint := fileStamp(s.hooksFile)
	fakePrint := fileStamp(s.cfg.FakeScriptFile)
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.stopWatch:
			return
		case <-t.C:
		}
		if fp := fileStamp(s.hooksFile); fp != hooksPrint {
			hooksPrint = fp
			s.reloadHooks()
		}
		if s.cfg.FakeScriptFile != "" {
			if fp := fileStamp(s.cfg.FakeScriptFile); fp != fakePrint {
				fakePrint = fp
				s.reloadFakeScript()
			}
		}
		s.refreshPlugins()
	}
}

// pluginPrints are the plugins' fingerprints as last loaded, in the order of their directories,
// and, for a plugin whose files did not load since, why its jobs run the version loaded last.
type pluginPrints struct {
	mu     sync.Mutex
	dirs   []string
	prints [][32]byte
	stale  map[string]string // plugin directory → the note
}

// staleNote is what is said of the jobs of the plugin in dir while its files do not load (oz0
// run says it as it makes one); "" when they do.
func (s *Server) staleNote(dir string) string {
	s.prints.mu.Lock()
	defer s.prints.mu.Unlock()
	return s.prints.stale[dir]
}

// setStale keeps (or, with what and how both "", clears) why the plugin in dir runs its version
// loaded last: what is wrong with its files since now, and how to see it. s.prints.mu is held.
func (s *Server) setStale(dir, name, what, how string) {
	if what == "" {
		delete(s.prints.stale, dir)
		return
	}
	if s.prints.stale == nil {
		s.prints.stale = map[string]string{}
	}
	s.prints.stale[dir] = fmt.Sprintf("%s's files %s since %s (%s): its jobs run the version that loaded before",
		name, what, time.Now().Format("15:04:05"), how)
}

// notePlugins takes the plugins' fingerprints as they are when the server loads them.
func (s *Server) notePlugins() {
	s.prints.mu.Lock()
	defer s.prints.mu.Unlock()
	for _, p := range s.Plugins() {
		s.prints.dirs = append(s.prints.dirs, p.Dir)
		s.prints.prints = append(s.prints.prints, fingerprint(p.Dir, s.StateDir))
	}
}

// refreshPlugins reloads each plugin whose files changed since it was loaded. The watcher calls it
// as it polls, and the node as a job is submitted (refreshBeforeJob): a job submitted right after an edit is
// saved runs the new version, without waiting for the next poll.
func (s *Server) refreshPlugins() {
	s.prints.mu.Lock()
	defer s.prints.mu.Unlock()
	for i, dir := range s.prints.dirs {
		fp := fingerprint(dir, s.StateDir)
		if fp == s.prints.prints[i] {
			continue
		}
		s.prints.prints[i] = fp
		s.reload(i, dir)
	}
}

// refreshBeforeJob is the node's look at the plugins' files as a job is submitted, while the
// watcher runs.
func (s *Server) refreshBeforeJob() {
	if s.cfg.Poll > 0 && !s.stopping() {
		s.refreshPlugins()
	}
}

func (s *Server) reload(i int, dir string) {
	p, rep, err := lint.Load(dir)
	name := filepath.Base(dir)
	if old := s.Plugins(); i < len(old) {
		name = old[i].Manifest.Name
	}
	var re *diag.ReportError
	switch {
	case errors.As(err, &re):
		s.setStale(dir, name, "have "+diag.Summary(rep), "oz0 plugin lint shows "+them(rep))
		s.outMu.Lock()
		fmt.Fprintf(s.out, "reload: kept the last good version of %s: it has %s\n", name, problemsToFix(rep))
		_ = diag.Write(s.out, rep, diag.FormatText, diag.Tool{Version: s.cfg.Version})
		s.outMu.Unlock()
		return
	case err != nil:
		s.setStale(dir, name, "do not load", termtext.OneLine(err.Error()))
		s.say("reload: kept the last good version of %s: %v", name, err)
		return
	}
	next := append([]*plugin.Plugin(nil), s.Plugins()...)
	next[i] = p
	if err := checkAgentNames(next); err != nil {
		s.setStale(dir, name, "do not load", termtext.OneLine(err.Error()))
		s.say("reload: kept the last good version of %s: %v", name, err)
		return
	}
	s.setStale(dir, name, "", "")
	s.plugins.Store(&next)
	s.askAhead([]*plugin.Plugin{p})
	s.say("reload: %s reloaded (%s: %s); new jobs take it", p.Manifest.Name, count(len(p.Agents), "agent", "agents"), strings.Join(p.AgentNames(), ", "))
}

// count is n and the noun, in the number n asks for: "1 agent", "2 agents".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// problemsToFix says what a report found and to fix it: "1 error; fix it and save again", "2
// errors; fix them and save again".
func problemsToFix(rep *diag.Report) string {
	return diag.Summary(rep) + "; fix " + them(rep) + " and save again"
}

// them is the pronoun of a report's findings: it, or them.
func them(rep *diag.Report) string {
	if e, w := rep.Counts(); e+w == 1 {
		return "it"
	}
	return "them"
}
