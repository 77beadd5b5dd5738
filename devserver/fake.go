package devserver

import (
	"sync"
	"sync/atomic"

	"github.com/orchestrator-zero/oz0/fakemodel"
)

// fakeModel is the dev server's fake model: made on its first call (or right after the start,
// in the background: no request needs it before a job's first model call), and made again from
// a new script when --fake-script's file is edited.
type fakeModel struct {
	key    string // the key the gateway holds as the fake record's secret; the fake takes only it
	mu     sync.Mutex
	script *fakemodel.Script // nil: the built-in one
	srv    atomic.Pointer[fakemodel.Server]
}

// server is the fake model in force.
func (f *fakeModel) server() *fakemodel.Server {
	if s := f.srv.Load(); s != nil {
		return s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.srv.Load(); s != nil {
		return s
	}
	script := f.script
	if script == nil {
		script = fakemodel.DefaultScript()
	}
	scriptCopy := *script
	scriptCopy.RequireKey = f.key
	s := fakemodel.New(&scriptCopy)
	s.KeepRequests = -1 // no one reads them here: kept, they held up to 1000 bodies of 32 MB
	f.srv.Store(s)
	return s
}

// replace puts script in force for the calls that come next (a call being answered finishes
// with the old one); its rules' counts start again.
func (f *fakeModel) replace(script *fakemodel.Script) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = script
	f.srv.Store(nil)
}
