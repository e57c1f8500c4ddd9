package common

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"sandscope/keymap"
	"sandscope/themes"
	"sandscope/ui/components"
)

// DialogKind is the shape of a dialog.
type DialogKind int

const (
	FormDialog    DialogKind = iota // text fields, enter submits
	ConfirmDialog                   // y/n
	PickDialog                      // choose one option
)

// Dialog is a modal prompt a screen shows over itself. While open it takes every key.
type Dialog struct {
	ID     string // what the answer is for
	Kind   DialogKind
	Title  string
	Text   string // explanation (confirm dialogs: the question)
	Labels []string
	Fields []textinput.Model
	focus  int
	Opts   []string
	Choice int // the option under the cursor (an index into Opts); set it before the first key
	// list navigates and filters a pick dialog's options (/ filters, as in every table)
	list   *components.List
	listAt int // the Choice the list's cursor was last put on
	Data   any // carried to the result (e.g. the row the dialog is about)
	// Validate, when set, checks a form's values on submit: an error keeps the form open, with
	// what was typed, and shows the error in it until the next edit.
	Validate func(values []string) error
	Err      string
}

// DialogResult is a closed dialog's answer.
type DialogResult struct {
	ID     string
	OK     bool
	Values []string
	Choice int
	Data   any
}

// NewForm makes a form; defaults pre-fill the fields.
func NewForm(id, title string, labels, defaults, placeholders []string) *Dialog {
	d := &Dialog{ID: id, Kind: FormDialog, Title: title, Labels: labels}
	for i := range labels {
		ti := textinput.New()
		ti.Prompt = ""
		ti.CharLimit = 4096
		if i < len(defaults) {
			ti.SetValue(defaults[i])
		}
		if i < len(placeholders) {
			ti.Placeholder = placeholders[i]
		}
		d.Fields = append(d.Fields, ti)
	}
	if len(d.Fields) > 0 {
		d.Fields[0].Focus()
	}
	return d
}

// NewConfirm makes a yes/no question.
func NewConfirm(id, title, text string) *Dialog {
	return &Dialog{ID: id, Kind: ConfirmDialog, Title: title, Text: text}
}

// NewPick makes a one-of-many choice; / filters the options.
func NewPick(id, title, text string, opts []string) *Dialog {
	return &Dialog{ID: id, Kind: PickDialog, Title: title, Text: text, Opts: opts, listAt: -1}
}

// pickList is the pick dialog's list, its cursor on Choice.
func (d *Dialog) pickList(k *keymap.KeyMap) *components.List {
	if d.list == nil {
		d.list = components.NewList(k)
		d.list.SetRows(components.Rows{N: len(d.Opts), Text: func(i int) string { return d.Opts[i] }})
		d.list.SetHeight(min(max(len(d.Opts), 1), maxPickRows))
	}
	if d.listAt != d.Choice {
		d.list.SelectIndex(d.Choice)
		d.listAt = d.Choice
	}
	return d.list
}

// maxPickRows is how many options a pick dialog shows at once (it scrolls beyond).
const maxPickRows = 12

// Update feeds the dialog a message. It returns a result once the dialog closes.
func (d *Dialog) Update(msg tea.Msg, k *keymap.KeyMap) (*DialogResult, tea.Cmd) {
	km, isKey := msg.(tea.KeyMsg)
	res := func(ok bool) *DialogResult {
		r := &DialogResult{ID: d.ID, OK: ok, Choice: d.Choice, Data: d.Data}
		for _, f := range d.Fields {
			r.Values = append(r.Values, f.Value())
		}
		return r
	}
	switch d.Kind {
	case ConfirmDialog:
		if !isKey {
			return nil, nil
		}
		switch {
		case key.Matches(km, k.Yes), key.Matches(km, k.Confirm):
			return res(true), nil
		case key.Matches(km, k.No), key.Matches(km, k.Cancel), km.Type == tea.KeyCtrlC:
			return res(false), nil
		}
		return nil, nil
	case PickDialog:
		if !isKey {
			return nil, nil
		}
		l := d.pickList(k)
		defer func() {
			if c := l.Cursor(); c >= 0 {
				d.Choice, d.listAt = c, c
			}
		}()
		switch {
		case km.Type == tea.KeyCtrlC:
			return res(false), nil
		case l.Capturing():
			// typing the filter: enter keeps it, esc clears it, up/down move
			_, cmd := l.Update(km)
			return nil, cmd
		case key.Matches(km, k.Confirm):
			if l.Cursor() < 0 {
				return nil, nil // the filter hides every option: nothing to choose
			}
			d.Choice = l.Cursor()
			return res(true), nil
		case key.Matches(km, k.Cancel):
			if l.Back() {
				return nil, nil // esc clears an active filter before it cancels
			}
			return res(false), nil
		case key.Matches(km, k.PrevField):
			l.Move(-1)
		case key.Matches(km, k.NextField):
			l.Move(1)
		default:
			_, cmd := l.Update(km)
			return nil, cmd
		}
		return nil, nil
	}
	if isKey {
		switch {
		case key.Matches(km, k.Confirm):
			r := res(true)
			if d.Validate != nil {
				if err := d.Validate(r.Values); err != nil {
					d.Err = err.Error()
					return nil, nil
				}
			}
			return r, nil
		case key.Matches(km, k.Cancel), km.Type == tea.KeyCtrlC:
			return res(false), nil
		case key.Matches(km, k.NextField):
			d.setFocus(d.focus + 1)
			return nil, nil
		case key.Matches(km, k.PrevField):
			d.setFocus(d.focus - 1)
			return nil, nil
		}
	}
	if len(d.Fields) == 0 {
		return nil, nil
	}
	var cmd tea.Cmd
	before := d.Fields[d.focus].Value()
	d.Fields[d.focus], cmd = d.Fields[d.focus].Update(msg)
	if d.Fields[d.focus].Value() != before {
		d.Err = ""
	}
	return nil, cmd
}

func (d *Dialog) setFocus(i int) {
	if len(d.Fields) == 0 {
		return
	}
	i = (i%len(d.Fields) + len(d.Fields)) % len(d.Fields)
	d.Fields[d.focus].Blur()
	d.focus = i
	d.Fields[d.focus].Focus()
}

// View renders the dialog as a bordered box at most width cells wide.
func (d *Dialog) View(st *themes.Styles, k *keymap.KeyMap, width int) string {
	w := width - 4
	if w > 76 {
		w = 76
	}
	if w < 20 {
		w = 20
	}
	var lines []string
	lines = append(lines, st.Title.Render(SanitizeText(d.Title)))
	if d.Text != "" {
		for _, l := range strings.Split(d.Text, "\n") {
			for _, wl := range Wrap(SanitizeText(l), w-4) {
				lines = append(lines, st.Text.Render(wl))
			}
		}
	}
	switch d.Kind {
	case ConfirmDialog:
		lines = append(lines, "", st.HelpKey.Render(k.Yes.Help().Key)+" "+st.HelpDesc.Render("yes")+"   "+
			st.HelpKey.Render(k.No.Help().Key+"/"+k.Cancel.Help().Key)+" "+st.HelpDesc.Render("no"))
	case PickDialog:
		l := d.pickList(k)
		if s := l.Status(); s != "" {
			lines = append(lines, st.Info.Render(Fit(s, w-4)))
		}
		if l.Len() == 0 {
			lines = append(lines, st.Faint.Render(Fit(fmt.Sprintf("  nothing matches %q", l.Filter()), w-4)))
		}
		for _, i := range l.Window() {
			// an option is one line, cut if it must be (a wrapped option reads as two)
			if l.IsCursor(i) {
				lines = append(lines, st.Selected.Render(Fit("> "+d.Opts[i], w-4)))
			} else {
				lines = append(lines, Fit("  "+d.Opts[i], w-4))
			}
		}
		lines = append(lines, "", st.HelpDesc.Render(k.Confirm.Help().Key+" choose · "+k.FilterRows.Help().Key+" filter · "+k.Cancel.Help().Key+" cancel"))
	default:
		lw := 0
		for _, l := range d.Labels {
			if len(l) > lw {
				lw = len(l)
			}
		}
		for i := range d.Fields {
			d.Fields[i].Width = w - lw - 8
			mark := "  "
			if i == d.focus {
				mark = "> "
			}
			lines = append(lines, mark+st.Faint.Render(Fit(d.Labels[i], lw))+" "+d.Fields[i].View())
		}
		if d.Err != "" {
			lines = append(lines, "")
			for _, l := range Wrap(SanitizeText(d.Err), w-4) {
				lines = append(lines, st.Error.Render(l))
			}
		}
		lines = append(lines, "", st.HelpDesc.Render(k.Confirm.Help().Key+" submit · "+k.NextField.Help().Key+" next field · "+k.Cancel.Help().Key+" cancel"))
	}
	return st.Border.Width(w).Render(lipgloss.JoinVertical(lipgloss.Left, lines...))
}

// Overlay draws box centred over the background, line by line (the background stays visible
// around it).
func Overlay(bg, box string, width, height int) string {
	bgl := strings.Split(bg, "\n")
	for len(bgl) < height {
		bgl = append(bgl, "")
	}
	bl := strings.Split(box, "\n")
	bw := lipgloss.Width(box)
	top := (height - len(bl)) / 2
	if top < 0 {
		top = 0
	}
	left := (width - bw) / 2
	if left < 0 {
		left = 0
	}
	for i, l := range bl {
		y := top + i
		if y >= len(bgl) {
			break
		}
		line := Fit(bgl[y], width)
		prefix := truncateCells(line, left)
		rest := cutCells(line, left+bw)
		bgl[y] = prefix + Fit(l, bw) + rest
	}
	return strings.Join(bgl[:max(height, 0)], "\n")
}

// RouteToDialog gives msg to the open dialog *d, if there is one. When the dialog closes it is
// cleared and answer receives the result. It reports whether a dialog was open (and so took the
// message): while a dialog is open, the screen under it sees nothing.
func RouteToDialog(d **Dialog, msg tea.Msg, k *keymap.KeyMap, answer func(*DialogResult) tea.Cmd) (bool, tea.Cmd) {
	if *d == nil {
		return false, nil
	}
	res, cmd := (*d).Update(msg, k)
	if res == nil {
		return true, cmd
	}
	*d = nil
	return true, tea.Batch(cmd, answer(res))
}
