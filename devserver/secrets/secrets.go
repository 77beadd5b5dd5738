// Package secrets keeps the tenant's secrets of `oz0 dev`: provider keys and the like, set with
// `oz0 secret set NAME` and read by the gateway. They live in one file, secrets.json, in the state
// directory, with mode 0600 from the moment it exists, rewritten atomically (a new file, created
// 0600 with O_EXCL, renamed over the old one) on every change.
//
// Values never leave this package except through Get: List gives names and times, and Masker
// gives a function that replaces every value in a byte slice with ***, which the job store applies
// to everything it writes.
//
// The file may be changed by another process (an `oz0 secret set` that writes the file directly
// while `oz0 dev` runs): every call but the masker's notices a changed file and reads it again, and
// changes are made under an flock, so two processes never lose each other's writes. Get, which
// the gateway calls on every model call, looks at the file at most every GetRecheck (a stat is
// ~10 µs, a tenth of what the gateway may add to a call): this process's own changes it sees at
// once, another's within GetRecheck. The masker learns of another process's change at the next
// call of this process (or Reload).
//
// The file:
//
//	{
//	  "version": 1,
//	  "secrets": {
//	    "ANTHROPIC_API_KEY": {"value": "sk-…", "set_at": "2026-11-29T10:00:00Z"}
//	  }
//	}
package secrets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/internal/filelock"
)

// FileName is the secrets file in the state directory.
const FileName = "secrets.json"

// GetRecheck is how long Get trusts what it last read of the file before it looks again.
const GetRecheck = 500 * time.Millisecond

// Errors that callers test with errors.Is.
var (
	ErrNotFound = errors.New("no such secret")
	ErrInvalid  = errors.New("invalid secret")
	ErrFile     = errors.New("unusable secrets file")
)

// Meta is what may be shown of a secret.
type Meta struct {
	Name  string    `json:"name"`
	SetAt time.Time `json:"set_at"`
}

type entry struct {
	Value string    `json:"value"`
	SetAt time.Time `json:"set_at"`
}

type fileData struct {
	Version int              `json:"version"`
	Secrets map[string]entry `json:"secrets"`
}

const fileVersion = 1

// Store is the tenant's secrets. It is safe for concurrent use.
type Store struct {
	dir, path string

	mu       sync.Mutex
	secrets  map[string]entry
	seen     fs.FileInfo // the file as last read or written; nil: none
	checked  time.Time   // when refresh last looked at the file
	warnings []string

	matcher atomic.Pointer[matcher]
}

// Open opens the secrets of the state directory dir, creating dir (0700) if need be; the file
// itself is created by the first Set. A file that others can read or write is made 0600 at once,
// and Warnings says so.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("%w: cannot create the state directory %s: %v; choose another with --state-dir", ErrFile, abs, err)
	}
	s := &Store{dir: abs, path: filepath.Join(abs, FileName), secrets: map[string]entry{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	s.rebuild()
	return s, nil
}

// Path is the secrets file.
func (s *Store) Path() string { return s.path }

// Warnings are what Open (or a later re-read) mended, for the caller to print: e.g. that the file
// was readable by others and is 0600 now.
func (s *Store) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.warnings)
}

// refresh reads the file again if it changed since it was last read or written. s.mu is held.
func (s *Store) refresh() error {
	s.checked = time.Now()
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		if s.seen != nil || len(s.secrets) > 0 {
			s.secrets, s.seen = map[string]entry{}, nil
			s.rebuild()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrFile, s.path, err)
	}
	if s.seen != nil && os.SameFile(fi, s.seen) && fi.ModTime().Equal(s.seen.ModTime()) && fi.Size() == s.seen.Size() && fi.Mode() == s.seen.Mode() {
		return nil
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file; move it away", ErrFile, s.path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := os.Chmod(s.path, 0o600); err != nil {
			return fmt.Errorf("%w: %s has mode %04o, so others can read the secrets, and it cannot be made 0600: %v", ErrFile, s.path, perm, err)
		}
		s.warnings = append(s.warnings, fmt.Sprintf("%s had mode %04o, so others could read it; it is 0600 now (consider rotating its keys)", s.path, perm))
		if fi, err = os.Stat(s.path); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrFile, s.path, err)
		}
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrFile, s.path, err)
	}
	var d fileData
	if err := json.Unmarshal(b, &d); err != nil {
		// Not the decoder's message: it may quote a character of a value.
		where := ""
		var se *json.SyntaxError
		if errors.As(err, &se) {
			where = fmt.Sprintf(" at byte %d", se.Offset)
		}
		return fmt.Errorf("%w: %s is not an oz0 secrets file (bad JSON%s); mend it, or move it away and set the secrets again", ErrFile, s.path, where)
	}
	if d.Version > fileVersion {
		return fmt.Errorf("%w: %s was written by a newer oz0 (version %d); upgrade oz0", ErrFile, s.path, d.Version)
	}
	for name, e := range d.Secrets {
		if err := check(name, e.Value); err != nil {
			return fmt.Errorf("%w: %s: %v; mend it, or move it away and set the secrets again", ErrFile, s.path, err)
		}
	}
	if d.Secrets == nil {
		d.Secrets = map[string]entry{}
	}
	s.secrets, s.seen = d.Secrets, fi
	s.rebuild()
	return nil
}

func check(name, value string) error {
	if !apiv1.ValidSecretName(name) {
		return fmt.Errorf("%w: name %q: want capitals, digits and _, starting with a capital, at most 128 (like an environment variable)", ErrInvalid, name)
	}
	if value == "" {
		return fmt.Errorf("%w: %s: the value is empty", ErrInvalid, name)
	}
	if len(value) > apiv1.MaxSecretValue {
		return fmt.Errorf("%w: %s: the value is %d bytes, over the limit of %d", ErrInvalid, name, len(value), apiv1.MaxSecretValue)
	}
	if !utf8.ValidString(value) {
		return fmt.Errorf("%w: %s: the value is not UTF-8 text", ErrInvalid, name)
	}
	return nil
}

// Reload reads the file again if another process changed it.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refresh()
}

// Get returns a secret's value, or an error matching ErrNotFound. It looks at the file again
// when it last did more than GetRecheck ago.
func (s *Store) Get(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.checked) >= GetRecheck {
		if err := s.refresh(); err != nil {
			return "", err
		}
	}
	e, ok := s.secrets[name]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return e.Value, nil
}

// List returns the secrets' names and when they were set, sorted by name; never their values.
func (s *Store) List() ([]Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	out := make([]Meta, 0, len(s.secrets))
	for name, e := range s.secrets {
		out = append(out, Meta{name, e.SetAt})
	}
	slices.SortFunc(out, func(a, b Meta) int { return cmpString(a.Name, b.Name) })
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Set sets (or replaces) a secret.
func (s *Store) Set(name, value string) error {
	if err := check(name, value); err != nil {
		return err
	}
	return s.change(func(m map[string]entry) error {
		m[name] = entry{Value: value, SetAt: time.Now().UTC().Truncate(time.Second)}
		return nil
	})
}

// Remove removes a secret, or returns an error matching ErrNotFound.
func (s *Store) Remove(name string) error {
	return s.change(func(m map[string]entry) error {
		if _, ok := m[name]; !ok {
			return fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		delete(m, name)
		return nil
	})
}

// change applies fn to the secrets and writes the file, under the process's mutex and the
// file's flock, after reading what another process may have written.
func (s *Store) change(fn func(map[string]entry) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := filelock.Lock(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFile, err)
	}
	defer unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	next := make(map[string]entry, len(s.secrets)+1)
	for k, v := range s.secrets {
		next[k] = v
	}
	if err := fn(next); err != nil {
		return err
	}
	fi, err := s.write(next)
	if err != nil {
		return err
	}
	s.secrets, s.seen = next, fi
	s.rebuild()
	return nil
}

// write replaces the file atomically: a new file, created 0600 with O_EXCL (os.CreateTemp), is
// written, synced and renamed over the old one, and the directory is synced.
func (s *Store) write(m map[string]entry) (fs.FileInfo, error) {
	b, err := json.MarshalIndent(fileData{Version: fileVersion, Secrets: m}, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	f, err := os.CreateTemp(s.dir, "."+FileName+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%w: cannot write in %s: %v", ErrFile, s.dir, err)
	}
	tmp := f.Name()
	fail := func(err error) (fs.FileInfo, error) {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("%w: write %s: %v", ErrFile, s.path, err)
	}
	// CreateTemp makes it 0600 less the umask; a umask cannot add bits, so this only mends a
	// umask that took the owner's.
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("%w: write %s: %v", ErrFile, s.path, err)
	}
	syncDir(s.dir)
	fi, err := os.Stat(s.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFile, s.path, err)
	}
	return fi, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Masker returns a function that replaces every secret value (see the matcher) in a byte slice
// with ***. It is safe for concurrent use, uses the secrets as they are when it is called (it
// follows Set and Remove), does not modify its argument, and returns it unchanged when there is
// nothing to mask.
func (s *Store) Masker() func([]byte) []byte {
	return func(b []byte) []byte {
		if m := s.matcher.Load(); m != nil {
			return m.mask(b)
		}
		return b
	}
}

// rebuild makes the masker's matcher from the secrets. s.mu is held.
func (s *Store) rebuild() {
	values := make([]string, 0, len(s.secrets))
	for _, e := range s.secrets {
		values = append(values, e.Value)
	}
	s.matcher.Store(newMatcher(values))
}
