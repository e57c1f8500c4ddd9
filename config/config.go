package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/adrg/xdg"
	"gopkg.in/yaml.v3"
)

// Themes are the accepted values of `theme`.
var Themes = []string{"auto", "dark", "light", "high-contrast"}

// Defaults applied when neither the file, the environment nor a flag sets a value.
const (
	DefaultTheme          = "auto"
	DefaultDetachKey      = "ctrl+]"
	DefaultLogMemoryLines = 100_000
	DefaultPollFast       = time.Second
	DefaultPollSlow       = 10 * time.Second
	// DefaultTokenCommandTimeout bounds a context's tokenCommand.
	DefaultTokenCommandTimeout = 10 * time.Second
)

// Limits keep a typo from asking for something absurd.
const (
	minLogMemoryLines = 1_000
	maxLogMemoryLines = 50_000_000
	minPoll           = 100 * time.Millisecond
	maxPoll           = time.Hour
	maxFileSize       = 1 << 20
)

// Config is the parsed configuration file. A missing file gives an empty Config (Exists false):
// everything then comes from defaults, the environment and flags.
type Config struct {
	Path   string // file the configuration was read from (or would be)
	Exists bool   // false when the file does not exist
	Mode   fs.FileMode

	CurrentContext string
	Contexts       []Context
	Theme          string
	Keys           map[string][]string
	LogMemoryLines int
	DetachKey      string
	PollFast       time.Duration
	PollSlow       time.Duration
	// Notify maps a kind of change (NotifyKinds) to the signals it gives (NotifySignals, "none"
	// dropped); a kind not set gives none.
	Notify map[string][]string
	// OTLP is `otlp:` (nil when absent): the OpenTelemetry export.
	OTLP *OTLP
	// Record is `record:`: what the record keeps per bridge (zero fields: the defaults).
	Record RecordBudget

	// lines records the line of each top-level key that was set (and of each keys.<action>).
	lines map[string]int
}

// Context is one named bridge: its URL and how to obtain its token. At most one of TokenEnv,
// TokenFile, TokenCommand and the inline token is set.
type Context struct {
	Name      string
	URL       string
	TokenEnv  string   // name of an environment variable holding the token
	TokenFile string   // file holding the token (~ and paths relative to the config file resolved)
	TokenArgv []string // tokenCommand: argv run directly, or ["sh", "-c", string] for the string form
	// TokenCommandTimeout bounds TokenArgv (default DefaultTokenCommandTimeout).
	TokenCommandTimeout time.Duration

	token     string // inline token; only accepted from a 0600 file; never printed
	hasInline bool

	Line      int // line of the context's entry
	TokenLine int // line of whichever token setting is present
}

// HasInlineToken reports whether the context carries its token inline in the file.
func (c Context) HasInlineToken() bool { return c.hasInline }

// Error is one problem in the configuration file.
type Error struct {
	File string
	Line int // 0 when the problem concerns the whole file
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// DefaultPath is where sandscope looks for its configuration: $SANDSCOPE_CONFIG when set, else
// $XDG_CONFIG_HOME/sandscope/config.yaml (~/.config/sandscope/config.yaml on most systems).
func DefaultPath(lookupEnv func(string) (string, bool)) string {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if p, ok := lookupEnv("SANDSCOPE_CONFIG"); ok && p != "" {
		return p
	}
	if dir, ok := lookupEnv("XDG_CONFIG_HOME"); ok && dir != "" && filepath.IsAbs(dir) {
		return filepath.Join(dir, "sandscope", "config.yaml")
	}
	return filepath.Join(xdg.ConfigHome, "sandscope", "config.yaml")
}

// Load reads and checks the configuration file at path. A missing file is not an error: it gives an
// empty Config with Exists false. Every problem found is returned (joined); each is an *Error with
// file and line. When the file parses but holds problems, the Config read so far comes with the
// error, so a caller can check more of it (its keys) and report everything at once.
func Load(path string) (*Config, error) {
	c := &Config{Path: path, lines: map[string]int{}}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "not a regular file"}
	}
	if st.Size() > maxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("file is %d bytes; a configuration file is at most %d", st.Size(), maxFileSize)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Exists = true
	c.Mode = st.Mode().Perm()
	if err := c.parse(data); err != nil {
		return c, err
	}
	return c, nil
}

// Parse checks configuration text as if it had been read from path with the given permissions
// (like Load, the Config read so far comes with the error).
func Parse(path string, mode fs.FileMode, data []byte) (*Config, error) {
	c := &Config{Path: path, Exists: true, Mode: mode.Perm(), lines: map[string]int{}}
	if err := c.parse(data); err != nil {
		return c, err
	}
	return c, nil
}

// ErrorAt is a problem with a setting ("theme", "keys.quit"), located at the line that set it
// (the whole file when the file does not set it).
func (c *Config) ErrorAt(setting, msg string) error {
	return &Error{File: c.Path, Line: c.Line(setting), Msg: msg}
}

// Line returns the line where a top-level key (e.g. "theme") or a key binding ("keys.quit") was set,
// or 0 when the file does not set it.
func (c *Config) Line(key string) int {
	if c == nil {
		return 0
	}
	return c.lines[key]
}

// Context returns the named context.
func (c *Config) Context(name string) (Context, bool) {
	if c == nil {
		return Context{}, false
	}
	for _, ctx := range c.Contexts {
		if ctx.Name == name {
			return ctx, true
		}
	}
	return Context{}, false
}

// ContextNames lists the contexts in file order.
func (c *Config) ContextNames() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.Contexts))
	for _, ctx := range c.Contexts {
		names = append(names, ctx.Name)
	}
	return names
}

// CheckKeys reports, with file and line, each action under `keys` that is not one of known (the
// key map's binding names). The key map itself lives elsewhere; this keeps its errors located.
func (c *Config) CheckKeys(known []string) error {
	if c == nil || len(c.Keys) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	actions := make([]string, 0, len(c.Keys))
	for a := range c.Keys {
		actions = append(actions, a)
	}
	sort.Slice(actions, func(i, j int) bool { return c.lines["keys."+actions[i]] < c.lines["keys."+actions[j]] })
	var errs []error
	for _, a := range actions {
		if !set[a] {
			errs = append(errs, &Error{File: c.Path, Line: c.lines["keys."+a],
				Msg: fmt.Sprintf("keys: no action %q (known: %s)", a, strings.Join(known, ", "))})
		}
	}
	return errors.Join(errs...)
}

// parser collects every problem instead of stopping at the first one.
type parser struct {
	file string
	errs []error
}

func (p *parser) errorf(line int, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

var topKeys = []string{"contexts", "currentContext", "detachKey", "keys", "logMemoryLines", "notify", "otlp", "pollFast", "pollSlow", "record", "theme"}
var contextKeys = []string{"name", "token", "tokenCommand", "tokenCommandTimeout", "tokenEnv", "tokenFile", "url"}

func (c *Config) parse(data []byte) error {
	p := &parser{file: c.Path}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return &Error{File: c.Path, Line: yamlErrorLine(err), Msg: "not valid YAML: " + yamlErrorText(err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // a file holding only comments
	}
	if root.Kind != yaml.MappingNode {
		return &Error{File: c.Path, Line: root.Line, Msg: "the top level must be a mapping of settings (key: value)"}
	}
	for _, kv := range pairs(p, root) {
		k, v := kv.key, kv.value
		c.lines[k.Value] = k.Line
		switch k.Value {
		case "currentContext":
			if s, ok := p.str(k.Value, v); ok {
				if s == "" {
					p.errorf(v.Line, "currentContext must not be empty")
				}
				c.CurrentContext = s
			}
		case "theme":
			if s, ok := p.str(k.Value, v); ok {
				if !contains(Themes, s) {
					p.errorf(v.Line, "theme %q is not one of %s", s, strings.Join(Themes, ", "))
				}
				c.Theme = s
			}
		case "detachKey":
			if s, ok := p.str(k.Value, v); ok {
				if strings.TrimSpace(s) == "" {
					p.errorf(v.Line, "detachKey must not be empty")
				}
				c.DetachKey = s
			}
		case "logMemoryLines":
			if n, ok := p.integer(k.Value, v); ok {
				if n < minLogMemoryLines || n > maxLogMemoryLines {
					p.errorf(v.Line, "logMemoryLines %d is out of range (%d to %d)", n, minLogMemoryLines, maxLogMemoryLines)
				}
				c.LogMemoryLines = n
			}
		case "pollFast":
			c.PollFast, _ = p.duration(k.Value, v)
		case "pollSlow":
			c.PollSlow, _ = p.duration(k.Value, v)
		case "keys":
			c.Keys = p.keys(c, v)
		case "notify":
			c.Notify = p.notify(c, v)
		case "otlp":
			c.OTLP = p.otlp(c, v)
		case "record":
			c.Record = p.record(c, v)
		case "contexts":
			c.Contexts = p.contexts(v, c.Mode)
		default:
			p.errorf(k.Line, "unknown setting %q (known: %s)", k.Value, strings.Join(topKeys, ", "))
		}
	}
	if c.PollFast > 0 && c.PollSlow > 0 && c.PollFast > c.PollSlow {
		p.errorf(c.lines["pollFast"], "pollFast (%s) must not be longer than pollSlow (%s)", c.PollFast, c.PollSlow)
	}
	if c.CurrentContext != "" && len(p.errs) == 0 {
		if _, ok := c.Context(c.CurrentContext); !ok {
			p.errorf(c.lines["currentContext"], "currentContext %q names no context (have: %s)", c.CurrentContext, listOrNone(c.ContextNames()))
		}
	}
	return errors.Join(p.errs...)
}

type pair struct{ key, value *yaml.Node }

// pairs returns a mapping's entries, reporting non-string and duplicate keys.
func pairs(p *parser, m *yaml.Node) []pair {
	var out []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k.Line, "keys must be plain names")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.errorf(k.Line, "%q is set twice (first on line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		out = append(out, pair{k, v})
	}
	return out
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!int":
			return "a number"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		default:
			// The value is not echoed: a misplaced token must not end up in an error.
			return "a string"
		}
	}
	return "something else"
}

func (p *parser) str(key string, v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "!!int" && v.Tag != "!!float" && v.Tag != "!!bool") {
		p.errorf(v.Line, "%s must be a string, not %s", key, kindName(v))
		return "", false
	}
	if v.Tag != "!!str" {
		p.errorf(v.Line, "%s must be a string, not %s (quote it if you mean the text %q)", key, kindName(v), v.Value)
		return "", false
	}
	return v.Value, true
}

func (p *parser) integer(key string, v *yaml.Node) (int, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
		p.errorf(v.Line, "%s must be a whole number, not %s", key, kindName(v))
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Value, "_", ""), 0, 64)
	if err != nil || n > int64(maxLogMemoryLines)*10 {
		p.errorf(v.Line, "%s: %q is not a usable whole number", key, v.Value)
		return 0, false
	}
	return int(n), true
}

func (p *parser) duration(key string, v *yaml.Node) (time.Duration, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		p.errorf(v.Line, "%s must be a duration such as \"2s\" or \"500ms\", not %s", key, kindName(v))
		return 0, false
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		p.errorf(v.Line, "%s: %q is not a duration (use a unit: \"2s\", \"500ms\", \"1m\")", key, v.Value)
		return 0, false
	}
	if d < minPoll || d > maxPoll {
		p.errorf(v.Line, "%s %s is out of range (%s to %s)", key, d, minPoll, maxPoll)
		return 0, false
	}
	return d, true
}

// keys reads `keys:` — a mapping of action name → one key or a list of keys. Action names are
// checked by the key map that applies them; here only the shape is checked.
func (p *parser) keys(c *Config, v *yaml.Node) map[string][]string {
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "keys must be a mapping of action: [key, …], not %s", kindName(v))
		return nil
	}
	out := map[string][]string{}
	for _, kv := range pairs(p, v) {
		action := kv.key.Value
		c.lines["keys."+action] = kv.key.Line
		var list []string
		switch kv.value.Kind {
		case yaml.ScalarNode:
			if s, ok := p.str("keys."+action, kv.value); ok {
				list = []string{s}
			}
		case yaml.SequenceNode:
			for _, item := range kv.value.Content {
				if s, ok := p.str("keys."+action+" entries", item); ok {
					list = append(list, s)
				}
			}
		default:
			p.errorf(kv.value.Line, "keys.%s must be a key or a list of keys, not %s", action, kindName(kv.value))
			continue
		}
		if kv.value.Kind == yaml.SequenceNode && len(kv.value.Content) == 0 {
			p.errorf(kv.value.Line, "keys.%s is an empty list (remove it to keep the default keys)", action)
		}
		for _, k := range list {
			if strings.TrimSpace(k) == "" && k != " " { // " " is the space bar
				p.errorf(kv.value.Line, "keys.%s has an empty key", action)
			}
		}
		out[action] = list
	}
	return out
}

func (p *parser) contexts(v *yaml.Node, mode fs.FileMode) []Context {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v.Line, "contexts must be a list of contexts (- name: …), not %s", kindName(v))
		return nil
	}
	var out []Context
	names := map[string]int{}
	for _, item := range v.Content {
		if item.Kind != yaml.MappingNode {
			p.errorf(item.Line, "each context must be a mapping with name and url, not %s", kindName(item))
			continue
		}
		ctx := Context{Line: item.Line}
		tokenSettings := 0
		for _, kv := range pairs(p, item) {
			k, val := kv.key, kv.value
			switch k.Value {
			case "name":
				ctx.Name, _ = p.str("name", val)
			case "url":
				ctx.URL, _ = p.str("url", val)
			case "tokenEnv":
				tokenSettings++
				ctx.TokenLine = k.Line
				if s, ok := p.str("tokenEnv", val); ok {
					if !validEnvName(s) {
						// Not echoed: a token pasted here by mistake must not be printed.
						p.errorf(val.Line, "tokenEnv must name an environment variable (letters, digits, _; not the token itself)")
					}
					ctx.TokenEnv = s
				}
			case "tokenFile":
				tokenSettings++
				ctx.TokenLine = k.Line
				if s, ok := p.str("tokenFile", val); ok {
					if s == "" {
						p.errorf(val.Line, "tokenFile must not be empty")
					}
					ctx.TokenFile = s
				}
			case "tokenCommand":
				tokenSettings++
				ctx.TokenLine = k.Line
				ctx.TokenArgv = p.command(val)
			case "tokenCommandTimeout":
				if d, ok := p.duration("tokenCommandTimeout", val); ok {
					ctx.TokenCommandTimeout = d
				}
			case "token":
				tokenSettings++
				ctx.TokenLine = k.Line
				// The value is never echoed, not even in a type error.
				if val.Kind != yaml.ScalarNode || val.Tag != "!!str" || val.Value == "" {
					p.errorf(val.Line, "token must be a non-empty string")
				} else if mode&0o077 != 0 {
					p.errorf(k.Line, "a token written in the file needs the file to be private: it is mode %04o, run `chmod 600 %s` (or use tokenEnv, tokenFile or tokenCommand)", mode, p.file)
				} else {
					ctx.token = val.Value
					ctx.hasInline = true
				}
			default:
				p.errorf(k.Line, "unknown context setting %q (known: %s)", k.Value, strings.Join(contextKeys, ", "))
			}
		}
		if ctx.Name == "" {
			p.errorf(item.Line, "context has no name")
		} else if first, dup := names[ctx.Name]; dup {
			p.errorf(item.Line, "context %q is defined twice (first on line %d)", ctx.Name, first)
		} else {
			names[ctx.Name] = item.Line
		}
		if ctx.URL == "" {
			p.errorf(item.Line, "context %q has no url", ctx.Name)
		} else if err := CheckURL(ctx.URL); err != nil {
			p.errorf(item.Line, "context %q: %v", ctx.Name, err)
		}
		if tokenSettings > 1 {
			p.errorf(ctx.TokenLine, "context %q sets more than one of token, tokenEnv, tokenFile, tokenCommand; keep one", ctx.Name)
		}
		if ctx.TokenCommandTimeout != 0 && ctx.TokenArgv == nil {
			p.errorf(item.Line, "context %q sets tokenCommandTimeout without tokenCommand", ctx.Name)
		}
		out = append(out, ctx)
	}
	return out
}

// command reads tokenCommand: a list is an argv run directly (no shell); a string is run with
// `sh -c`, for pipelines, and only because the user wrote it that way.
func (p *parser) command(v *yaml.Node) []string {
	switch {
	case v.Kind == yaml.SequenceNode:
		var argv []string
		for _, item := range v.Content {
			if s, ok := p.str("tokenCommand entries", item); ok {
				argv = append(argv, s)
			}
		}
		if len(argv) == 0 || argv[0] == "" {
			p.errorf(v.Line, "tokenCommand needs a program to run")
			return nil
		}
		return argv
	case v.Kind == yaml.ScalarNode && v.Tag == "!!str":
		if strings.TrimSpace(v.Value) == "" {
			p.errorf(v.Line, "tokenCommand must not be empty")
			return nil
		}
		return []string{"sh", "-c", v.Value}
	default:
		p.errorf(v.Line, "tokenCommand must be a list (argv, run directly) or a string (run with sh -c), not %s", kindName(v))
		return nil
	}
}

// CheckURL accepts http and https URLs with a host and no credentials or query.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// Not echoed: a URL that does not parse may still hold a secret.
		return errors.New("url does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q must start with http:// or https://", truncate(raw, 80))
	}
	if u.Host == "" {
		return fmt.Errorf("url %q has no host", truncate(raw, 80))
	}
	if u.User != nil {
		// Never echo it: the user part may hold a secret.
		return errors.New("url must not carry credentials (user:password@); use a token setting")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("url must not carry a query or fragment (a token never goes in a URL)")
	}
	return nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := append([]string(nil), names...)
	sort.Strings(s)
	return strings.Join(s, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func yamlErrorLine(err error) int {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return 0
	}
	// yaml.v3 syntax errors read "yaml: line N: …".
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		rest := msg[i+5:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(rest[:j]); err == nil {
			return n
		}
	}
	return 0
}

func yamlErrorText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "line ") {
		msg = msg[i+2:]
	}
	return msg
}
