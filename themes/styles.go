package themes

import (
	"io"
	"os"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Badge names one state badge. Each has exactly one style in Styles.Badges.
type Badge int

const (
	BadgeRunning Badge = iota
	BadgeExited
	BadgeExitedFail // EXITED with a non-zero code
	BadgeKilled
	BadgeTimedOut
	BadgeError
	BadgeLost
	BadgeStale
	BadgeUnknown
	BadgeStopped
	BadgeStarting // launched, not yet confirmed by a status lookup
	// Stream states of the log view.
	BadgeLive
	BadgeQuiet
	BadgeReconnecting
	BadgeSuspectEnd
	BadgeEnded
	BadgeFailed
	BadgeConnecting
	// BadgeUnconfirmed: an ending nothing confirms (REPORTED n (unconfirmed), ENDED exit code
	// unknown) or an outcome not known yet (INTERRUPTED): a warning, never success's colour.
	BadgeUnconfirmed
	badgeCount
)

// Styles is every style sandscope renders with, built once from a Palette for one renderer.
type Styles struct {
	Renderer *lipgloss.Renderer
	Palette  Palette

	Header    lipgloss.Style // the top bar
	Title     lipgloss.Style
	Text      lipgloss.Style
	Faint     lipgloss.Style
	Error     lipgloss.Style
	Warning   lipgloss.Style
	Success   lipgloss.Style
	Info      lipgloss.Style
	Border    lipgloss.Style // boxes (overlays, prompts)
	Selected  lipgloss.Style // the cursor row
	Stale     lipgloss.Style // whole rows that belong to an earlier incarnation
	TableHead lipgloss.Style
	Tab       lipgloss.Style
	TabActive lipgloss.Style
	Stderr    lipgloss.Style
	Marker    lipgloss.Style // inline log markers (interrupted, gap, …)
	MarkerBad lipgloss.Style // markers that mean loss (gap, lost, suspect end)
	Match     lipgloss.Style // search highlight
	Timestamp lipgloss.Style
	HelpKey   lipgloss.Style
	HelpDesc  lipgloss.Style
	Prefixes  []lipgloss.Style // multi-follow process prefixes
	Badges    [badgeCount]lipgloss.Style
	// Paints are the plain-colour styles as Paints, for what is drawn on every row or redraw
	Paints Paints
	// badgePaints are the badges' styles as Paints (BadgeText): tables draw one per row
	badgePaints [badgeCount]Paint
	JSONKey     lipgloss.Style
	Cursor      lipgloss.Style // the cursor cell of an embedded terminal
}

// Paints hold the styles drawn most often as Paints: each renders exactly what the style of the
// same name renders, without lipgloss's per-render measuring and colour conversion.
type Paints struct {
	Title, Text, Faint, Warning, Info, Selected, Stale, TableHead, Tab, TabActive Paint
}

// Badge returns the style of one state badge.
func (s *Styles) Badge(b Badge) lipgloss.Style {
	if b < 0 || b >= badgeCount {
		return s.Text
	}
	return s.Badges[b]
}

// BadgeText renders text in badge b's style (what Badge(b).Render(text) gives, made cheaper for
// the plain labels tables show on every row).
func (s *Styles) BadgeText(b Badge, text string) string {
	if b < 0 || b >= badgeCount {
		return s.Text.Render(text)
	}
	return s.badgePaints[b].Render(text)
}

// Prefix returns the style of the i-th followed process's prefix.
func (s *Styles) Prefix(i int) lipgloss.Style {
	if len(s.Prefixes) == 0 {
		return s.Text
	}
	if i < 0 {
		i = -i
	}
	return s.Prefixes[i%len(s.Prefixes)]
}

// NewRenderer returns a renderer for w whose colour profile honours NO_COLOR (and the terminal's
// abilities). noColor forces plain output.
func NewRenderer(w io.Writer, noColor bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(w)
	if noColor || os.Getenv("NO_COLOR") != "" {
		r.SetColorProfile(termenv.Ascii)
	}
	return r
}

// AsciiRenderer returns a renderer that emits no escape sequences at all (tests, golden files).
func AsciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	r.SetHasDarkBackground(true)
	return r
}

// New builds Styles from a palette for a renderer.
func New(p Palette, r *lipgloss.Renderer) *Styles {
	c := func(s string) lipgloss.Color { return lipgloss.Color(s) }
	ns := r.NewStyle
	s := &Styles{Renderer: r, Palette: p}
	s.Header = ns().Foreground(c(p.HeaderFg)).Background(c(p.HeaderBg)).Bold(true)
	s.Title = ns().Foreground(c(p.Primary)).Bold(true)
	s.Text = ns().Foreground(c(p.Text))
	s.Faint = ns().Foreground(c(p.Faint))
	s.Error = ns().Foreground(c(p.Error)).Bold(true)
	s.Warning = ns().Foreground(c(p.Warning))
	s.Success = ns().Foreground(c(p.Success))
	s.Info = ns().Foreground(c(p.Info))
	s.Border = ns().Border(lipgloss.RoundedBorder()).BorderForeground(c(p.Border)).Padding(0, 1)
	s.Selected = ns().Foreground(c(p.SelectedFg)).Background(c(p.SelectedBg))
	s.Stale = ns().Foreground(c(p.Faint)).Italic(true)
	s.TableHead = ns().Foreground(c(p.Faint)).Bold(true)
	s.Tab = ns().Foreground(c(p.Faint)).Padding(0, 1)
	s.TabActive = ns().Foreground(c(p.Primary)).Bold(true).Underline(true).Padding(0, 1)
	s.Stderr = ns().Foreground(c(p.Stderr))
	s.Marker = ns().Foreground(c(p.Marker)).Bold(true)
	s.MarkerBad = ns().Foreground(c(p.Error)).Bold(true)
	s.Match = ns().Foreground(c(p.MatchFg)).Background(c(p.MatchBg))
	s.Timestamp = ns().Foreground(c(p.Faint))
	s.HelpKey = ns().Foreground(c(p.Primary)).Bold(true)
	s.HelpDesc = ns().Foreground(c(p.Faint))
	s.JSONKey = ns().Foreground(c(p.Primary))
	s.Cursor = ns().Reverse(true)
	for _, pc := range p.Prefixes {
		s.Prefixes = append(s.Prefixes, ns().Foreground(c(pc)).Bold(true))
	}
	badge := func(col string) lipgloss.Style { return ns().Foreground(c(col)).Bold(true) }
	s.Badges[BadgeRunning] = badge(p.Success)
	s.Badges[BadgeExited] = badge(p.Info)
	s.Badges[BadgeExitedFail] = badge(p.Warning)
	s.Badges[BadgeKilled] = badge(p.Warning)
	s.Badges[BadgeTimedOut] = badge(p.Warning)
	s.Badges[BadgeError] = badge(p.Error)
	s.Badges[BadgeLost] = badge(p.Error).Reverse(true)
	s.Badges[BadgeStale] = ns().Foreground(c(p.Faint)).Bold(true)
	s.Badges[BadgeUnknown] = badge(p.Warning).Italic(true)
	s.Badges[BadgeStopped] = badge(p.Faint)
	s.Badges[BadgeStarting] = badge(p.Info).Italic(true)
	s.Badges[BadgeLive] = badge(p.Success)
	s.Badges[BadgeQuiet] = badge(p.Info)
	s.Badges[BadgeReconnecting] = badge(p.Warning)
	s.Badges[BadgeSuspectEnd] = badge(p.Error)
	s.Badges[BadgeEnded] = badge(p.Info)
	s.Badges[BadgeFailed] = badge(p.Error).Reverse(true)
	s.Badges[BadgeConnecting] = badge(p.Faint)
	s.Badges[BadgeUnconfirmed] = badge(p.Warning).Italic(true)
	for i, b := range s.Badges {
		s.badgePaints[i] = NewPaint(b)
	}
	s.Paints = Paints{Title: NewPaint(s.Title), Text: NewPaint(s.Text), Faint: NewPaint(s.Faint), Warning: NewPaint(s.Warning),
		Info: NewPaint(s.Info), Selected: NewPaint(s.Selected), Stale: NewPaint(s.Stale), TableHead: NewPaint(s.TableHead), Tab: NewPaint(s.Tab),
		TabActive: NewPaint(s.TabActive)}
	return s
}
