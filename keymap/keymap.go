package keymap

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/charmbracelet/bubbles/key"
)

// Screen names a group of bindings: the keys that work on one screen.
type Screen string

const (
	Global    Screen = "global"
	Lists     Screen = "lists"
	Sandboxes Screen = "sandboxes"
	Sandbox   Screen = "sandbox"
	Runs      Screen = "runs"
	Logs      Screen = "logs"
	Terminal  Screen = "terminal"
	Prompt    Screen = "prompt"
)

// Screens lists the groups in the order help and the Markdown table show them.
var screenOrder = []Screen{Global, Lists, Sandboxes, Sandbox, Runs, Logs, Terminal, Prompt}

// KeyMap is every binding sandscope knows.
type KeyMap struct {
	// Global: work on every screen.
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back, Quit, Help, Refresh         key.Binding
	Contexts                                key.Binding
	AllRuns                                 key.Binding // the screen of every run of every known sandbox
	Notifications                           key.Binding // the notification list (endings, losses, suspect ends, gaps)
	BridgePanel                             key.Binding // the bridge panel (capacity: the container pool)

	// Tables (the sandboxes list, the sandbox screen's tabs, the context picker).
	FilterRows, Sort, SortReverse key.Binding

	// Sandboxes screen.
	Create, Add, Forget, Delete, Stop, Replace key.Binding

	// Sandbox screen.
	NextTab, PrevTab, Exec, Kill, Relaunch, Select, Shell, Preview key.Binding
	Report                                                         key.Binding // write a triage report of the sandbox or the selected process
	FollowAll                                                      key.Binding // one log view following every process of the sandbox

	// All-runs screen.
	Attention key.Binding // narrow to the runs that need attention (LOST, SUSPECT END, STALE)

	// Log view.
	Follow, Timestamps, Wrap, Search, NextMatch, PrevMatch  key.Binding
	Filter, NextMarker, PrevMarker, Save, CopyCursor, JSONL key.Binding
	LogReport                                               key.Binding // write a triage report of the followed process

	// Terminals: the embedded pane, and the Terminals tab of the sandbox screen (attach, interrupt,
	// terminate act on the selected terminal there). LeavePane is the detach key: it is never sent
	// to the remote terminal.
	FocusPane, LeavePane, Attach, Interrupt, Terminate key.Binding

	// Prompts and confirmations.
	Confirm, Cancel, Yes, No, NextField, PrevField key.Binding
}

// entry names one binding for overrides and the Markdown table.
type entry struct {
	name   string
	screen Screen
	b      *key.Binding
}

func (k *KeyMap) entries() []entry {
	return []entry{
		{"up", Global, &k.Up}, {"down", Global, &k.Down},
		{"page_up", Global, &k.PageUp}, {"page_down", Global, &k.PageDown},
		{"top", Global, &k.Top}, {"bottom", Global, &k.Bottom},
		{"open", Global, &k.Open}, {"back", Global, &k.Back},
		{"refresh", Global, &k.Refresh}, {"contexts", Global, &k.Contexts},
		{"all_runs", Global, &k.AllRuns},
		{"help", Global, &k.Help}, {"quit", Global, &k.Quit},
		{"notifications", Global, &k.Notifications}, {"bridge_panel", Global, &k.BridgePanel},

		{"filter_rows", Lists, &k.FilterRows}, {"sort", Lists, &k.Sort}, {"sort_reverse", Lists, &k.SortReverse},

		{"create", Sandboxes, &k.Create}, {"add", Sandboxes, &k.Add},
		{"forget", Sandboxes, &k.Forget}, {"delete", Sandboxes, &k.Delete},
		{"stop", Sandboxes, &k.Stop}, {"replace", Sandboxes, &k.Replace},

		{"next_tab", Sandbox, &k.NextTab}, {"prev_tab", Sandbox, &k.PrevTab},
		{"exec", Sandbox, &k.Exec}, {"kill", Sandbox, &k.Kill},
		{"relaunch", Sandbox, &k.Relaunch}, {"select", Sandbox, &k.Select},
		{"shell", Sandbox, &k.Shell}, {"preview", Sandbox, &k.Preview},
		{"report", Sandbox, &k.Report}, {"follow_all", Sandbox, &k.FollowAll},

		{"attention", Runs, &k.Attention},

		{"follow", Logs, &k.Follow}, {"timestamps", Logs, &k.Timestamps}, {"wrap", Logs, &k.Wrap},
		{"search", Logs, &k.Search}, {"next_match", Logs, &k.NextMatch}, {"prev_match", Logs, &k.PrevMatch},
		{"filter", Logs, &k.Filter}, {"next_marker", Logs, &k.NextMarker}, {"prev_marker", Logs, &k.PrevMarker},
		{"save", Logs, &k.Save}, {"copy_cursor", Logs, &k.CopyCursor}, {"jsonl", Logs, &k.JSONL},
		{"log_report", Logs, &k.LogReport},

		{"focus_terminal", Terminal, &k.FocusPane}, {"leave_terminal", Terminal, &k.LeavePane},
		{"attach", Terminal, &k.Attach}, {"interrupt", Terminal, &k.Interrupt},
		{"terminate", Terminal, &k.Terminate},

		{"confirm", Prompt, &k.Confirm}, {"cancel", Prompt, &k.Cancel},
		{"yes", Prompt, &k.Yes}, {"no", Prompt, &k.No},
		{"next_field", Prompt, &k.NextField}, {"prev_field", Prompt, &k.PrevField},
	}
}

func b(keys []string, helpKey, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
}

// New returns the default key map.
func New() *KeyMap {
	return &KeyMap{
		Up:       b([]string{"up", "k"}, "↑/k", "move up"),
		Down:     b([]string{"down", "j"}, "↓/j", "move down"),
		PageUp:   b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g/home", "go to top"),
		Bottom:   b([]string{"end", "G"}, "G/end", "go to bottom"),
		Open:     b([]string{"enter"}, "enter", "open"),
		Back:     b([]string{"esc"}, "esc", "back"),
		Refresh:  b([]string{"ctrl+r"}, "ctrl+r", "refresh now"),
		Help:     b([]string{"?"}, "?", "toggle help"),
		Contexts: b([]string{"C"}, "C", "switch context"),
		AllRuns:  b([]string{"W"}, "W", "every run of every sandbox"),
		Quit:     b([]string{"q", "ctrl+c"}, "q", "quit"),

		Notifications: b([]string{"M"}, "M", "notifications (messages)"),
		BridgePanel:   b([]string{"B"}, "B", "bridge panel (capacity)"),

		FilterRows:  b([]string{"/"}, "/", "filter rows (esc clears)"),
		Sort:        b([]string{"o"}, "o", "sort by the next column"),
		SortReverse: b([]string{"O"}, "O", "reverse the sort"),

		Create:  b([]string{"c"}, "c", "create sandbox"),
		Add:     b([]string{"a"}, "a", "add sandbox by ID"),
		Forget:  b([]string{"f"}, "f", "forget sandbox"),
		Delete:  b([]string{"d"}, "d", "delete sandbox"),
		Stop:    b([]string{"s"}, "s", "stop sandbox (local)"),
		Replace: b([]string{"R"}, "R", "replace container (local)"),

		NextTab:   b([]string{"tab"}, "tab", "next tab"),
		PrevTab:   b([]string{"shift+tab"}, "shift+tab", "previous tab"),
		Exec:      b([]string{"e"}, "e", "exec a process"),
		Kill:      b([]string{"x"}, "x", "kill (pick signal)"),
		Relaunch:  b([]string{"r"}, "r", "relaunch here"),
		Select:    b([]string{" "}, "space", "select for multi-follow"),
		Shell:     b([]string{"s"}, "s", "new terminal"),
		Preview:   b([]string{"p"}, "p", "preview: details and live output"),
		Report:    b([]string{"P"}, "P", "write triage report"),
		FollowAll: b([]string{"F"}, "F", "follow every process in one log"),

		Attention: b([]string{"!"}, "!", "only runs needing attention (LOST, SUSPECT END, STALE)"),

		Follow:     b([]string{"f"}, "f", "toggle follow"),
		Timestamps: b([]string{"t"}, "t", "toggle timestamps"),
		Wrap:       b([]string{"w"}, "w", "toggle wrap"),
		Search:     b([]string{"/"}, "/", "search"),
		NextMatch:  b([]string{"n"}, "n", "next match"),
		PrevMatch:  b([]string{"N"}, "N", "previous match"),
		Filter:     b([]string{"&"}, "&", "filter lines"),
		NextMarker: b([]string{"]"}, "]", "next marker"),
		PrevMarker: b([]string{"["}, "[", "previous marker"),
		Save:       b([]string{"s"}, "s", "save raw bytes"),
		CopyCursor: b([]string{"y"}, "y", "copy cursor (OSC 52)"),
		JSONL:      b([]string{"J"}, "J", "toggle JSONL view"),
		LogReport:  b([]string{"P"}, "P", "write triage report"),

		FocusPane: b([]string{"enter"}, "enter", "focus terminal"),
		LeavePane: b([]string{"ctrl+]"}, "ctrl+]", "leave terminal"),
		Attach:    b([]string{"A"}, "A", "attach full screen"),
		Interrupt: b([]string{"i"}, "i", "interrupt (SIGINT)"),
		Terminate: b([]string{"T"}, "T", "end (asks how)"),

		Confirm:   b([]string{"enter"}, "enter", "confirm"),
		Cancel:    b([]string{"esc"}, "esc", "cancel"),
		Yes:       b([]string{"y"}, "y", "yes"),
		No:        b([]string{"n"}, "n", "no"),
		NextField: b([]string{"tab", "down"}, "tab", "next field"),
		PrevField: b([]string{"shift+tab", "up"}, "shift+tab", "previous field"),
	}
}

// Names lists every binding name ApplyOverrides accepts, sorted.
func (k *KeyMap) Names() []string {
	var out []string
	for _, e := range k.entries() {
		out = append(out, e.name)
	}
	sort.Strings(out)
	return out
}

// Problem is one refused key override: the binding it names, the other binding of a clash ("" for
// other problems), and what is wrong.
type Problem struct {
	Name  string
	Other string
	Err   error
}

func (p Problem) Error() string { return fmt.Sprintf("key override %q: %v", p.Name, p.Err) }

// ApplyOverrides replaces the keys of named bindings (names as in Names, e.g. "quit" or
// "next_marker"); keys are in any notation ParseKey reads ("ctrl-g" is ctrl+g). An unknown name,
// an empty key list, a key ParseKey refuses or a key that a screen would then handle two ways
// (Check) is an error (every problem, joined) and nothing is changed.
func (k *KeyMap) ApplyOverrides(over map[string][]string) error {
	ps := k.Check(over)
	if len(ps) > 0 {
		errs := make([]error, len(ps))
		for i, p := range ps {
			errs[i] = p
		}
		return errors.Join(errs...)
	}
	k.apply(k.parse(over))
	return nil
}

// Check reports every problem of a set of overrides, in the order of Names: unknown names, empty
// key lists, keys ParseKey refuses, and keys that would then mean two bindings on one screen (a
// clash that involves at least one overridden binding). k is not changed.
func (k *KeyMap) Check(over map[string][]string) []Problem {
	byName := map[string]*key.Binding{}
	for _, e := range k.entries() {
		byName[e.name] = e.b
	}
	names := make([]string, 0, len(over))
	for name := range over {
		names = append(names, name)
	}
	sort.Strings(names)
	var ps []Problem
	valid := map[string][]string{} // the overrides without a problem of their own, checked for clashes
	for _, name := range names {
		keys := over[name]
		if _, ok := byName[name]; !ok {
			ps = append(ps, Problem{Name: name, Err: fmt.Errorf("no such binding (known: %s)", strings.Join(k.Names(), ", "))})
			continue
		}
		if len(keys) == 0 {
			ps = append(ps, Problem{Name: name, Err: errors.New("no keys given")})
			continue
		}
		ok := true
		for _, s := range keys {
			if _, err := ParseKey(s); err != nil {
				ps = append(ps, Problem{Name: name, Err: err})
				ok = false
			}
		}
		if ok {
			valid[name] = keys
		}
	}
	trial := *k
	trial.apply(k.parse(valid))
	return append(ps, trial.clashes(valid)...)
}

// parse turns valid overrides into key names.
func (k *KeyMap) parse(over map[string][]string) map[string][]string {
	parsed := make(map[string][]string, len(over))
	for name, keys := range over {
		for _, s := range keys {
			if pk, err := ParseKey(s); err == nil {
				parsed[name] = append(parsed[name], pk.Name)
			}
		}
	}
	return parsed
}

func (k *KeyMap) apply(parsed map[string][]string) {
	for _, e := range k.entries() {
		if keys, ok := parsed[e.name]; ok {
			desc := e.b.Help().Desc
			e.b.SetKeys(keys...)
			e.b.SetHelp(helpLabel(keys), desc)
		}
	}
}

// together lists, for each screen of the TUI, the bindings it handles at the same time, the
// root's included: one key in two of them would act two ways there. (The terminal pane takes
// enter to focus, not to open; dialogs take only the prompt keys.)
var together = []struct {
	where  string
	groups []Screen
	plus   []string
	minus  []string
}{
	{"the sandboxes screen", []Screen{Global, Lists, Sandboxes}, nil, nil},
	{"the sandbox screen", []Screen{Global, Lists, Sandbox}, []string{"attach", "interrupt", "terminate"}, nil},
	{"the stable sandbox screen", []Screen{Global}, []string{"next_tab", "prev_tab", "exec", "shell", "report", "select", "create", "delete"}, nil},
	{"the all-runs screen", []Screen{Global, Lists, Runs}, nil, nil},
	{"the log view", []Screen{Global, Logs}, nil, nil},
	{"the terminal pane", []Screen{Global, Terminal}, nil, []string{"open", "leave_terminal"}},
	{"dialogs", []Screen{Prompt}, nil, nil},
}

// clashes finds keys bound twice within one screen where at least one of the two bindings is
// overridden.
func (k *KeyMap) clashes(over map[string][]string) []Problem {
	var ps []Problem
	reported := map[[2]string]bool{}
	for _, t := range together {
		owner := map[string]string{}
		for _, e := range k.entries() {
			in := slices.Contains(t.groups, e.screen) || slices.Contains(t.plus, e.name)
			if !in || slices.Contains(t.minus, e.name) {
				continue
			}
			for _, kk := range e.b.Keys() {
				prev, taken := owner[kk]
				if !taken {
					owner[kk] = e.name
					continue
				}
				_, a := over[prev]
				_, b := over[e.name]
				if !a && !b {
					continue
				}
				name, other := e.name, prev
				if !b {
					name, other = prev, e.name
				}
				if reported[[2]string{name, other}] {
					continue
				}
				reported[[2]string{name, other}] = true
				ps = append(ps, Problem{Name: name, Other: other, Err: fmt.Errorf("key %q is also %q on %s (it would act two ways there)", helpLabel([]string{kk}), other, t.where)})
			}
		}
	}
	return ps
}

func helpLabel(keys []string) string {
	parts := make([]string, len(keys))
	for i, s := range keys {
		if s == " " {
			s = "space"
		}
		parts[i] = s
	}
	return strings.Join(parts, "/")
}

// ScreenOrder lists the screen groups in display order.
func ScreenOrder() []Screen { return append([]Screen(nil), screenOrder...) }

// NamedBinding is a binding with the name overrides use.
type NamedBinding struct {
	Name    string
	Binding key.Binding
}

// NamedBindings returns the bindings of one screen group with their names, in display order.
func (k *KeyMap) NamedBindings(s Screen) []NamedBinding {
	var out []NamedBinding
	for _, e := range k.entries() {
		if e.screen == s {
			out = append(out, NamedBinding{e.name, *e.b})
		}
	}
	return out
}

// Bindings returns the bindings of one screen group, in display order.
func (k *KeyMap) Bindings(s Screen) []key.Binding {
	var out []key.Binding
	for _, e := range k.entries() {
		if e.screen == s {
			out = append(out, *e.b)
		}
	}
	return out
}

// ShortHelp is the one-line help of a screen: its most used keys plus help and quit.
func (k *KeyMap) ShortHelp(s Screen) []key.Binding {
	switch s {
	case Sandboxes:
		return []key.Binding{k.Open, k.Create, k.Add, k.Delete, k.Help, k.Quit}
	case Sandbox:
		return []key.Binding{k.Open, k.NextTab, k.Exec, k.Kill, k.Relaunch, k.Select, k.Back, k.Help}
	case Logs:
		return []key.Binding{k.Follow, k.Search, k.NextMarker, k.Save, k.CopyCursor, k.Back, k.Help}
	case Terminal:
		return []key.Binding{k.LeavePane, k.FocusPane, k.Attach, k.Interrupt, k.Terminate, k.Back}
	case Prompt:
		return []key.Binding{k.Confirm, k.Cancel, k.NextField}
	}
	return []key.Binding{k.Open, k.Back, k.Help, k.Quit}
}

// FullHelp is every key of a screen in columns: the screen's own keys first, then the global ones.
func (k *KeyMap) FullHelp(s Screen) [][]key.Binding {
	var cols [][]key.Binding
	if s != Global {
		cols = appendColumns(cols, k.Bindings(s))
	}
	return appendColumns(cols, k.Bindings(Global))
}

// HelpColumns lays out a screen's full help: its groups of keys (only the keys that work where
// the user is), each in columns. The root adds the keys it handles itself on every screen.
func (k *KeyMap) HelpColumns(groups ...[]key.Binding) [][]key.Binding {
	var cols [][]key.Binding
	for _, g := range groups {
		cols = appendColumns(cols, g)
	}
	return cols
}

// appendColumns appends bs to cols in columns of at most six keys.
func appendColumns(cols [][]key.Binding, bs []key.Binding) [][]key.Binding {
	for len(bs) > 6 {
		cols = append(cols, bs[:6])
		bs = bs[6:]
	}
	if len(bs) > 0 {
		cols = append(cols, bs)
	}
	return cols
}
