// Package buildinfo says which build of oz0 is running: the version, commit and date a release
// build sets with -ldflags, else what the Go toolchain stamped into the binary (a go install's
// module version, a checkout's VCS revision), and the git ref whose files belong to the build.
//
// The ref matters because oz0 points at files of its own repository: the JSON Schemas that the
// scaffold's yaml-language-server lines name, and the lint rules' documentation that SARIF's
// helpUri links to. A release points at its tag, so those URLs serve what that release embeds;
// any other build (a snapshot, a checkout, a pseudo-version) points at main, the closest there
// is to what it was built from.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// DevRef is the ref of a build that is not a release.
const DevRef = "main"

// Info describes one build. Its JSON is what `oz0 version --json` prints.
type Info struct {
	Version  string `json:"version"`            // "0.3.0" for a release, a module version for a go install, else "dev"
	Commit   string `json:"commit,omitempty"`   // the full commit hash, when known
	Date     string `json:"date,omitempty"`     // when the commit was made (RFC 3339), when known
	Modified bool   `json:"modified,omitempty"` // built from a checkout with uncommitted changes
	Ref      string `json:"ref"`                // the release's tag, else DevRef
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// Stamped is what a release build sets with -ldflags -X (all empty for any other build).
type Stamped struct {
	Version string // "0.3.0"
	Commit  string
	Date    string
	Tag     string // "v0.3.0"; empty for a snapshot, which has no tag of its own
}

// Read describes this binary: what the release build stamped, else the Go toolchain's build
// information.
func Read(s Stamped) Info {
	bi, _ := debug.ReadBuildInfo()
	return read(s, bi)
}

func read(s Stamped, bi *debug.BuildInfo) Info {
	// goreleaser stamps what it could not read from git as "none" and the zero time.
	if s.Commit == "none" {
		s.Commit = ""
	}
	if strings.HasPrefix(s.Date, "0001-01-01") {
		s.Date = ""
	}
	info := Info{Version: s.Version, Commit: s.Commit, Date: s.Date, Ref: s.Tag,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil && info.Version == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
			// A go install of a tagged module version (not a pseudo-version, not a dirty
			// checkout) is that release.
			if info.Ref == "" && semver.IsValid(v) && semver.Build(v) == "" && !module.IsPseudoVersion(v) {
				info.Ref = v
			}
		}
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				info.Commit = kv.Value
			case "vcs.time":
				info.Date = kv.Value
			case "vcs.modified":
				info.Modified = kv.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Ref == "" {
		info.Ref = DevRef
	}
	return info
}

// String is the version as `oz0 version` says it, with the commit and date once: a
// pseudo-version already holds both.
func (i Info) String() string {
	commit := i.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	var extra []string
	if commit != "" && !strings.Contains(i.Version, commit) {
		if i.Modified {
			commit += "-dirty"
		}
		extra = append(extra, "commit "+commit)
	}
	if i.Date != "" && !module.IsPseudoVersion(i.Version) {
		extra = append(extra, dateOnly(i.Date))
	}
	if len(extra) == 0 {
		return i.Version
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(extra, ", "))
}

// dateOnly keeps the day of an RFC 3339 time.
func dateOnly(t string) string {
	if len(t) >= 10 {
		return t[:10]
	}
	return t
}
