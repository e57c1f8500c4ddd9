package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SourceKind says which layer a value came from.
type SourceKind string

const (
	FromDefault SourceKind = "default"
	FromFile    SourceKind = "file"
	FromEnv     SourceKind = "env"
	FromFlag    SourceKind = "flag"
	FromNone    SourceKind = "none" // nothing set, and no default applies
)

// Source says where one effective value came from.
type Source struct {
	Kind SourceKind `json:"kind"`
	File string     `json:"file,omitempty"` // FromFile
	Line int        `json:"line,omitempty"` // FromFile
	Name string     `json:"name,omitempty"` // env variable or flag name
}

func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		if s.Line > 0 {
			return fmt.Sprintf("%s:%d", s.File, s.Line)
		}
		return s.File
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag --" + s.Name
	case "":
		return string(FromNone)
	default:
		return string(s.Kind)
	}
}

// Flags are the command-line settings that override the file and the environment. Empty means
// "not given".
type Flags struct {
	URL       string // --url
	TokenFile string // --token-file
	Context   string // --context
	Theme     string // --theme, where a command offers it
}

// Environment variables sandscope reads.
const (
	EnvURL     = "SANDSCOPE_URL"
	EnvToken   = "SANDBOX_API_KEY"
	EnvContext = "SANDSCOPE_CONTEXT"
	EnvTheme   = "SANDSCOPE_THEME"
)

// TokenKind says how the effective token is obtained.
type TokenKind string

const (
	TokenNone    TokenKind = "none"    // no token: the embedded local bridge makes its own
	TokenEnv     TokenKind = "env"     // an environment variable
	TokenFile    TokenKind = "file"    // a file
	TokenCommand TokenKind = "command" // a command's standard output
	TokenInline  TokenKind = "inline"  // written in the (private) configuration file
)

// TokenRef says how to obtain the token without holding it. Its String never includes the token.
type TokenRef struct {
	Kind    TokenKind     `json:"kind"`
	Env     string        `json:"env,omitempty"`
	File    string        `json:"file,omitempty"`
	Argv    []string      `json:"command,omitempty"`
	Timeout time.Duration `json:"-"`
	Source  Source        `json:"source"`

	inline    string
	lookupEnv func(string) (string, bool)
}

func (t TokenRef) String() string {
	switch t.Kind {
	case TokenEnv:
		return "from environment variable " + t.Env
	case TokenFile:
		return "from file " + t.File
	case TokenCommand:
		return "from command " + describeArgv(t.Argv)
	case TokenInline:
		return "written in the configuration file (hidden)"
	default:
		return "none"
	}
}

// Effective is the resolved configuration: each value with where it came from. It holds no token.
type Effective struct {
	ConfigPath   string `json:"configPath"`
	ConfigExists bool   `json:"configExists"`

	Context       string `json:"context"`
	ContextSource Source `json:"contextSource"`

	// URL is the bridge to use; "" means the embedded local bridge.
	URL       string `json:"url"`
	URLSource Source `json:"urlSource"`

	Token TokenRef `json:"token"`

	Theme       string `json:"theme"`
	ThemeSource Source `json:"themeSource"`

	Keys       map[string][]string `json:"keys"`
	KeysSource map[string]Source   `json:"keysSource"`

	LogMemoryLines       int    `json:"logMemoryLines"`
	LogMemoryLinesSource Source `json:"logMemoryLinesSource"`

	DetachKey       string `json:"detachKey"`
	DetachKeySource Source `json:"detachKeySource"`

	PollFast       time.Duration `json:"pollFast"`
	PollFastSource Source        `json:"pollFastSource"`
	PollSlow       time.Duration `json:"pollSlow"`
	PollSlowSource Source        `json:"pollSlowSource"`

	// Notify maps each kind of change (NotifyKinds) to its signals (bell, osc9, osc777); only the
	// file sets it, and every kind is present (an empty list: the notification list and status
	// line only).
	Notify       map[string][]string `json:"notify"`
	NotifySource map[string]Source   `json:"notifySource"`

	// Record is what the record keeps per bridge; only the file sets it.
	Record EffectiveRecord `json:"record"`
}

// EffectiveRecord is the record's budget and where each part came from.
type EffectiveRecord struct {
	Keep                    time.Duration `json:"keep"`
	KeepSource              Source        `json:"keepSource"`
	MaxEvents               int           `json:"maxEvents"`
	MaxEventsSource         Source        `json:"maxEventsSource"`
	CapturePerProcess       int64         `json:"capturePerProcess"`
	CapturePerProcessSource Source        `json:"capturePerProcessSource"`
	CaptureTotal            int64         `json:"captureTotal"`
	CaptureTotalSource      Source        `json:"captureTotalSource"`
}

// Local reports whether the effective settings call for the embedded local bridge.
func (e *Effective) Local() bool { return e.URL == "" }

// Resolve computes the effective settings. Precedence, highest first: flag, environment, file,
// default; for the URL, a context named by --context counts as a flag. c may be nil (no file). lookupEnv is usually os.LookupEnv.
func (c *Config) Resolve(flags Flags, lookupEnv func(string) (string, bool)) (*Effective, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if c == nil {
		c = &Config{lines: map[string]int{}}
	}
	e := &Effective{ConfigPath: c.Path, ConfigExists: c.Exists, Keys: map[string][]string{}, KeysSource: map[string]Source{}}
	file := func(key string) Source { return Source{Kind: FromFile, File: c.Path, Line: c.Line(key)} }
	env := func(name string) (string, bool) {
		v, ok := lookupEnv(name)
		return v, ok && v != ""
	}

	// Context: which entry of the file applies.
	switch {
	case flags.Context != "":
		e.Context, e.ContextSource = flags.Context, Source{Kind: FromFlag, Name: "context"}
	default:
		if v, ok := env(EnvContext); ok {
			e.Context, e.ContextSource = v, Source{Kind: FromEnv, Name: EnvContext}
		} else if c.CurrentContext != "" {
			e.Context, e.ContextSource = c.CurrentContext, file("currentContext")
		} else {
			e.ContextSource = Source{Kind: FromNone}
		}
	}
	var ctx *Context
	if e.Context != "" {
		found, ok := c.Context(e.Context)
		if !ok {
			where := "no configuration file"
			if c.Exists {
				where = "contexts in " + c.Path + ": " + listOrNone(c.ContextNames())
			}
			return nil, fmt.Errorf("context %q (%s) is not defined (%s)", e.Context, e.ContextSource, where)
		}
		ctx = &found
	}

	// URL.
	// A context named on the command line is as explicit as --url, so it beats SANDSCOPE_URL; a
	// context from the environment or the file does not.
	switch {
	case flags.URL != "":
		e.URL, e.URLSource = flags.URL, Source{Kind: FromFlag, Name: "url"}
	case ctx != nil && e.ContextSource.Kind == FromFlag:
		e.URL, e.URLSource = ctx.URL, Source{Kind: FromFile, File: c.Path, Line: ctx.Line}
	default:
		if v, ok := env(EnvURL); ok {
			e.URL, e.URLSource = v, Source{Kind: FromEnv, Name: EnvURL}
		} else if ctx != nil {
			e.URL, e.URLSource = ctx.URL, Source{Kind: FromFile, File: c.Path, Line: ctx.Line}
		} else {
			e.URLSource = Source{Kind: FromDefault}
		}
	}
	if e.URL != "" {
		if err := CheckURL(e.URL); err != nil {
			return nil, fmt.Errorf("bridge URL (%s): %w", e.URLSource, err)
		}
	}

	// Token: --token-file, then $SANDBOX_API_KEY, then the context's setting.
	e.Token = TokenRef{Kind: TokenNone, Source: Source{Kind: FromNone}, lookupEnv: lookupEnv}
	switch {
	case flags.TokenFile != "":
		e.Token.Kind, e.Token.File, e.Token.Source = TokenFile, expandHome(flags.TokenFile), Source{Kind: FromFlag, Name: "token-file"}
	default:
		if _, ok := env(EnvToken); ok {
			e.Token.Kind, e.Token.Env, e.Token.Source = TokenEnv, EnvToken, Source{Kind: FromEnv, Name: EnvToken}
		} else if ctx != nil {
			src := Source{Kind: FromFile, File: c.Path, Line: ctx.TokenLine}
			switch {
			case ctx.TokenEnv != "":
				e.Token.Kind, e.Token.Env, e.Token.Source = TokenEnv, ctx.TokenEnv, src
			case ctx.TokenFile != "":
				e.Token.Kind, e.Token.File, e.Token.Source = TokenFile, resolveRelative(c.Path, ctx.TokenFile), src
			case ctx.TokenArgv != nil:
				e.Token.Kind, e.Token.Argv, e.Token.Source = TokenCommand, ctx.TokenArgv, src
				e.Token.Timeout = ctx.TokenCommandTimeout
			case ctx.hasInline:
				e.Token.Kind, e.Token.inline, e.Token.Source = TokenInline, ctx.token, src
			}
		}
	}

	// Theme.
	switch {
	case flags.Theme != "":
		e.Theme, e.ThemeSource = flags.Theme, Source{Kind: FromFlag, Name: "theme"}
	default:
		if v, ok := env(EnvTheme); ok {
			e.Theme, e.ThemeSource = v, Source{Kind: FromEnv, Name: EnvTheme}
		} else if c.Theme != "" {
			e.Theme, e.ThemeSource = c.Theme, file("theme")
		} else {
			e.Theme, e.ThemeSource = DefaultTheme, Source{Kind: FromDefault}
		}
	}
	if !contains(Themes, e.Theme) {
		return nil, fmt.Errorf("theme %q (%s) is not one of %s", e.Theme, e.ThemeSource, strings.Join(Themes, ", "))
	}

	for action, keys := range c.Keys {
		e.Keys[action] = append([]string(nil), keys...)
		e.KeysSource[action] = file("keys." + action)
	}

	e.LogMemoryLines, e.LogMemoryLinesSource = DefaultLogMemoryLines, Source{Kind: FromDefault}
	if c.LogMemoryLines != 0 {
		e.LogMemoryLines, e.LogMemoryLinesSource = c.LogMemoryLines, file("logMemoryLines")
	}
	e.DetachKey, e.DetachKeySource = DefaultDetachKey, Source{Kind: FromDefault}
	if c.DetachKey != "" {
		e.DetachKey, e.DetachKeySource = c.DetachKey, file("detachKey")
	}
	e.PollFast, e.PollFastSource = DefaultPollFast, Source{Kind: FromDefault}
	if c.PollFast != 0 {
		e.PollFast, e.PollFastSource = c.PollFast, file("pollFast")
	}
	e.PollSlow, e.PollSlowSource = DefaultPollSlow, Source{Kind: FromDefault}
	if c.PollSlow != 0 {
		e.PollSlow, e.PollSlowSource = c.PollSlow, file("pollSlow")
	}
	e.Notify, e.NotifySource = map[string][]string{}, map[string]Source{}
	for _, k := range NotifyKinds {
		if v, ok := c.Notify[k]; ok {
			e.Notify[k], e.NotifySource[k] = append([]string{}, v...), file("notify."+k)
		} else {
			e.Notify[k], e.NotifySource[k] = []string{}, Source{Kind: FromDefault}
		}
	}
	e.Record = c.resolveRecord(file)
	if e.PollFast > e.PollSlow {
		return nil, fmt.Errorf("pollFast %s (%s) is longer than pollSlow %s (%s)", e.PollFast, e.PollFastSource, e.PollSlow, e.PollSlowSource)
	}
	return e, nil
}

// ErrNoToken means the token source exists but yields nothing.
var ErrNoToken = errors.New("empty token")

// maxTokenBytes bounds what a token file or command may produce.
const maxTokenBytes = 64 << 10

// Get obtains the token the reference describes (TokenNone gives ""). Errors name the source,
// never the token.
func (t TokenRef) Get(ctx context.Context) (string, error) {
	var tok string
	switch t.Kind {
	case TokenNone, "":
		return "", nil
	case TokenEnv:
		lookup := t.lookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		v, ok := lookup(t.Env)
		if !ok {
			return "", fmt.Errorf("token %s (%s): variable not set", t, t.Source)
		}
		tok = v
	case TokenFile:
		data, err := readLimited(t.File)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) && pe.Path == t.File {
				err = pe.Err // the path is named already
			}
			return "", fmt.Errorf("token %s (%s): %w", t, t.Source, err)
		}
		tok = string(data)
	case TokenCommand:
		out, err := runTokenCommand(ctx, t.Argv, t.Timeout)
		if err != nil {
			return "", fmt.Errorf("token %s (%s): %w", t, t.Source, err)
		}
		tok = out
	case TokenInline:
		tok = t.inline
	default:
		return "", fmt.Errorf("token: unknown kind %q", t.Kind)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("token %s (%s): %w", t, t.Source, ErrNoToken)
	}
	if strings.ContainsAny(tok, "\r\n\x00") {
		return "", fmt.Errorf("token %s (%s): spans several lines; a token is one line", t, t.Source)
	}
	return tok, nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokenBytes {
		return nil, fmt.Errorf("larger than %d bytes; not a token file", maxTokenBytes)
	}
	return data, nil
}

// limitedBuffer keeps at most max bytes and remembers whether more arrived.
type limitedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if len(p) > room {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// runTokenCommand runs argv directly (no shell is added here; the string form of tokenCommand was
// already turned into an explicit `sh -c`), with a timeout, stdin empty, and returns its stdout.
func runTokenCommand(ctx context.Context, argv []string, timeout time.Duration) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errors.New("no command")
	}
	if timeout <= 0 {
		timeout = DefaultTokenCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = time.Second
	stdout := &limitedBuffer{max: maxTokenBytes}
	stderr := &limitedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return "", fmt.Errorf("timed out after %s", timeout)
	}
	if err != nil {
		// stderr is the command's own complaint (a password manager saying it is locked);
		// its first line is shown, stdout never is.
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.buf.String()), "\n")
		if first != "" {
			return "", fmt.Errorf("%w: %s", err, truncate(first, 200))
		}
		return "", err
	}
	if stdout.overflow {
		return "", fmt.Errorf("printed more than %d bytes; not a token", maxTokenBytes)
	}
	return stdout.buf.String(), nil
}

func describeArgv(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return fmt.Sprintf("sh -c %q", truncate(argv[2], 60))
	}
	parts := make([]string, 0, len(argv))
	for _, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\"'\\") {
			a = fmt.Sprintf("%q", a)
		}
		parts = append(parts, a)
	}
	return truncate(strings.Join(parts, " "), 80)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// resolveRelative expands ~ and makes a relative path relative to the configuration file's folder.
func resolveRelative(configPath, p string) string {
	p = expandHome(p)
	if filepath.IsAbs(p) || configPath == "" {
		return p
	}
	return filepath.Join(filepath.Dir(configPath), p)
}

// Row is one line of the effective configuration as `sandscope config` shows it.
type Row struct {
	Setting string `json:"setting"`
	Value   string `json:"value"`
	Source  Source `json:"source"`
}

// Rows lists the effective settings in display order, keys sorted by action. The token row shows
// how the token is obtained, never its value.
func (e *Effective) Rows() []Row {
	url := e.URL
	if url == "" {
		url = "(embedded local bridge)"
	}
	ctxName := e.Context
	if ctxName == "" {
		ctxName = "(none)"
	}
	rows := []Row{
		{"context", ctxName, e.ContextSource},
		{"url", url, e.URLSource},
		{"token", e.Token.String(), e.Token.Source},
		{"theme", e.Theme, e.ThemeSource},
		{"logMemoryLines", fmt.Sprint(e.LogMemoryLines), e.LogMemoryLinesSource},
		{"detachKey", e.DetachKey, e.DetachKeySource},
		{"pollFast", e.PollFast.String(), e.PollFastSource},
		{"pollSlow", e.PollSlow.String(), e.PollSlowSource},
	}
	r := e.Record
	rows = append(rows,
		Row{"record.keep", FormatKeep(r.Keep), r.KeepSource},
		Row{"record.maxEvents", fmt.Sprint(r.MaxEvents), r.MaxEventsSource},
		Row{"record.capturePerProcess", FormatSize(r.CapturePerProcess), r.CapturePerProcessSource},
		Row{"record.captureTotal", FormatSize(r.CaptureTotal), r.CaptureTotalSource})
	for _, k := range NotifyKinds {
		v := strings.Join(e.Notify[k], ", ")
		if v == "" {
			v = "none"
		}
		rows = append(rows, Row{"notify." + k, v, e.NotifySource[k]})
	}
	actions := make([]string, 0, len(e.Keys))
	for a := range e.Keys {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		rows = append(rows, Row{"keys." + a, strings.Join(e.Keys[a], ", "), e.KeysSource[a]})
	}
	return rows
}
