package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func stamped(version string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "sandscope", Version: version}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

const rev = "09bd6df8c1e2aa55bb66cc77dd88ee99ff001122"

func TestVersionResolution(t *testing.T) {
	for _, c := range []struct {
		name                string
		ldV, ldC, ldD       string
		bi                  *debug.BuildInfo
		version, commit, dt string
		modified            bool
	}{
		{name: "release: the linker's values win",
			ldV: "v1.2.3", ldC: rev, ldD: "2026-12-02T10:00:00Z",
			bi:      stamped("(devel)", "vcs.revision", "ffffffffffffffffffffffffffffffffffffffff", "vcs.time", "2026-01-01T00:00:00Z", "vcs.modified", "true"),
			version: "v1.2.3", commit: rev, dt: "2026-12-02T10:00:00Z"},
		{name: "release without build info",
			ldV: "v1.2.3", ldC: rev, ldD: "2026-12-02T10:00:00Z",
			version: "v1.2.3", commit: rev, dt: "2026-12-02T10:00:00Z"},
		{name: "go install module@version",
			bi:      stamped("v0.4.0"),
			version: "v0.4.0"},
		{name: "go install module@commit: a pseudo-version names the commit and its time",
			bi:      stamped("v0.0.0-20261202131500-09bd6df8c1e2"),
			version: "v0.0.0-20261202131500-09bd6df8c1e2", commit: "09bd6df8c1e2", dt: "2026-12-02T13:15:00Z"},
		{name: "pseudo-version after a pre-release tag",
			bi:      stamped("v1.3.0-rc.1.0.20261202131500-09bd6df8c1e2"),
			version: "v1.3.0-rc.1.0.20261202131500-09bd6df8c1e2", commit: "09bd6df8c1e2", dt: "2026-12-02T13:15:00Z"},
		{name: "go build in a checkout: module version stamped from VCS, revision and time too",
			bi:      stamped("v0.0.0-20261202131500-09bd6df8c1e2+dirty", "vcs.revision", rev, "vcs.time", "2026-12-02T13:15:00Z", "vcs.modified", "true"),
			version: "v0.0.0-20261202131500-09bd6df8c1e2+dirty", commit: rev, dt: "2026-12-02T13:15:00Z", modified: true},
		{name: "go build in a checkout, (devel): the short revision",
			bi:      stamped("(devel)", "vcs.revision", rev, "vcs.time", "2026-12-02T13:15:00Z", "vcs.modified", "false"),
			version: "09bd6df8c1e2", commit: rev, dt: "2026-12-02T13:15:00Z"},
		{name: "uncommitted changes are marked",
			bi:      stamped("(devel)", "vcs.revision", rev, "vcs.time", "2026-12-02T13:15:00Z", "vcs.modified", "true"),
			version: "09bd6df8c1e2-dirty", commit: rev, dt: "2026-12-02T13:15:00Z", modified: true},
		{name: "only the linker's version",
			ldV: "v2.0.0", bi: stamped("(devel)", "vcs.revision", rev, "vcs.time", "2026-12-02T13:15:00Z"),
			version: "v2.0.0", commit: rev, dt: "2026-12-02T13:15:00Z"},
		{name: "nothing known (-buildvcs=false, a test binary)",
			bi:      stamped("(devel)"),
			version: "dev"},
		{name: "no build info at all",
			version: "dev"},
		{name: "not a pseudo-version: no commit invented",
			bi:      stamped("v1.0.0-beta-ffffffffffff"),
			version: "v1.0.0-beta-ffffffffffff"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := resolve(c.ldV, c.ldC, c.ldD, c.bi)
			if in.Version != c.version || in.Commit != c.commit || in.Date != c.dt || in.Modified != c.modified {
				t.Errorf("got version %q commit %q date %q modified %v; want %q %q %q %v",
					in.Version, in.Commit, in.Date, in.Modified, c.version, c.commit, c.dt, c.modified)
			}
			if in.Go == "" || in.Platform == "" {
				t.Errorf("toolchain %q, platform %q: want both", in.Go, in.Platform)
			}
		})
	}
}

func TestVersionNeverEmpty(t *testing.T) {
	if v := Version(); v == "" {
		t.Fatal("Version() is empty")
	}
	if Get() != Get() {
		t.Error("Get() differs between calls")
	}
}

func TestVersionText(t *testing.T) {
	in := resolve("v1.2.3", rev, "2026-12-02T10:00:00Z", nil)
	s := in.String()
	for _, want := range []string{"sandscope version v1.2.3\n", "commit: " + rev + "\n", "date:   2026-12-02T10:00:00Z\n", "go:     "} {
		if !strings.Contains(s, want) {
			t.Errorf("version text lacks %q:\n%s", want, s)
		}
	}
	s = resolve("", "", "", stamped("(devel)", "vcs.revision", rev, "vcs.modified", "true")).String()
	if !strings.HasPrefix(s, "sandscope version 09bd6df8c1e2-dirty\n") || !strings.Contains(s, "commit: "+rev+" (with uncommitted changes)\n") || !strings.Contains(s, "date:   unknown\n") {
		t.Errorf("a dirty checkout's version text:\n%s", s)
	}
	if s = resolve("", "", "", nil).String(); !strings.Contains(s, "version dev\n") || !strings.Contains(s, "commit: unknown\n") {
		t.Errorf("an unknown build's version text:\n%s", s)
	}
}
