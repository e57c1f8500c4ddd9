// Package buildinfo says which sandscope this is: its version, the commit it was built from and
// when. A release sets all three with the linker:
//
//	go build -ldflags "-X sandscope/internal/buildinfo.version=v1.2.3
//	    -X sandscope/internal/buildinfo.commit=<full hash> -X sandscope/internal/buildinfo.date=<RFC 3339>"
//
// Any other build takes what the Go toolchain stamped into the binary (runtime/debug.ReadBuildInfo):
// the module version of `go install module@version`, else the VCS revision and time that
// `go build` records in a git checkout. "dev" is the version only when nothing at all is known.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Set by the linker at release (-X); empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Unknown is the version when neither the linker, the module version nor VCS stamping said one.
const Unknown = "dev"

// Info is what is known about this build. Version is never empty; Commit and Date are empty when
// unknown.
type Info struct {
	Version  string // v1.2.3, a pseudo-version, a short revision (with -dirty), or "dev"
	Commit   string // the full commit hash the binary was built from
	Modified bool   // the checkout had uncommitted changes (VCS stamping only)
	Date     string // when it was built (release) or committed (VCS stamping), RFC 3339
	Go       string // the Go toolchain, e.g. go1.26.8
	Platform string // GOOS/GOARCH
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's build information, resolved once.
func Get() Info {
	once.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			bi = nil
		}
		info = resolve(version, commit, date, bi)
	})
	return info
}

// Version is Get().Version: never empty.
func Version() string { return Get().Version }

// resolve combines what the linker set (ldVersion, ldCommit, ldDate) with what the toolchain
// stamped (bi, nil when there is none). Linker values win field by field.
func resolve(ldVersion, ldCommit, ldDate string, bi *debug.BuildInfo) Info {
	in := Info{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var modVersion, revision, vcsTime string
	if bi != nil {
		if bi.GoVersion != "" {
			in.Go = bi.GoVersion
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			modVersion = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	in.Commit, in.Date = revision, vcsTime
	if revision == "" && modVersion != "" {
		// a pseudo-version (v0.0.0-20260102150405-abcdef123456) names its commit and time
		in.Commit, in.Date = pseudoCommit(modVersion)
	}
	switch {
	case ldVersion != "":
		in.Version = ldVersion
	case modVersion != "":
		in.Version = modVersion
	case revision != "":
		in.Version = short(revision)
		if in.Modified {
			in.Version += "-dirty"
		}
	default:
		in.Version = Unknown
	}
	if ldCommit != "" {
		in.Commit, in.Modified = ldCommit, false
	}
	if ldDate != "" {
		in.Date = ldDate
	}
	return in
}

// short is a revision cut to 12 characters, as Go's pseudo-versions cut it.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// pseudoCommit is the commit prefix and time a Go pseudo-version carries, or empty strings when v
// is not one.
func pseudoCommit(v string) (commit, date string) {
	v, _, _ = strings.Cut(v, "+") // +incompatible, +dirty
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 || !isHex(v[i+1:]) {
		return "", ""
	}
	rest := v[:i]
	j := max(strings.LastIndexByte(rest, '-'), strings.LastIndexByte(rest, '.'))
	if j < 0 || len(rest)-j-1 != 14 {
		return "", ""
	}
	t, err := time.Parse("20060102150405", rest[j+1:])
	if err != nil {
		return "", ""
	}
	return v[i+1:], t.UTC().Format(time.RFC3339)
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return s != ""
}

// String is the text of `sandscope --version`: "sandscope version " and Long.
func (in Info) String() string { return "sandscope version " + in.Long() + "\n" }

// Long is the version, then on lines of their own the commit, the date (of the release build, or
// of the commit for a build from a checkout) and the toolchain.
func (in Info) Long() string {
	c := in.Commit
	switch {
	case c == "":
		c = "unknown"
	case in.Modified:
		c += " (with uncommitted changes)"
	}
	d := in.Date
	if d == "" {
		d = "unknown"
	}
	return fmt.Sprintf("%s\ncommit: %s\ndate:   %s\ngo:     %s %s", in.Version, c, d, in.Go, in.Platform)
}
