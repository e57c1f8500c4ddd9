package themes

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

//go:embed data/*.json
var builtin embed.FS

// Palette is a theme: semantic colour names mapped to hex colours ("#rrggbb") or ANSI numbers
// ("0".."255"). Components never see it directly; they use Styles.
type Palette struct {
	Name       string   `json:"name"`
	Primary    string   `json:"primary"`
	Text       string   `json:"text"`
	Faint      string   `json:"faint"`
	Error      string   `json:"error"`
	Warning    string   `json:"warning"`
	Success    string   `json:"success"`
	Info       string   `json:"info"`
	Border     string   `json:"border"`
	SelectedFg string   `json:"selected_fg"`
	SelectedBg string   `json:"selected_bg"`
	Stdout     string   `json:"stdout"`
	Stderr     string   `json:"stderr"`
	Marker     string   `json:"marker"`
	MatchFg    string   `json:"match_fg"`
	MatchBg    string   `json:"match_bg"`
	HeaderFg   string   `json:"header_fg"`
	HeaderBg   string   `json:"header_bg"`
	Prefixes   []string `json:"prefixes"` // colours of the per-process prefixes in multi-follow
}

// colourRE is compiled at first use, not at every command's start.
var colourRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|[0-9]{1,3})$`)
})

// Validate reports the first missing or malformed colour.
func (p Palette) Validate() error {
	fields := map[string]string{
		"primary": p.Primary, "text": p.Text, "faint": p.Faint, "error": p.Error, "warning": p.Warning,
		"success": p.Success, "info": p.Info, "border": p.Border, "selected_fg": p.SelectedFg,
		"selected_bg": p.SelectedBg, "stdout": p.Stdout, "stderr": p.Stderr, "marker": p.Marker,
		"match_fg": p.MatchFg, "match_bg": p.MatchBg, "header_fg": p.HeaderFg, "header_bg": p.HeaderBg,
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !colourRE().MatchString(fields[n]) {
			return fmt.Errorf("theme %q: colour %s = %q is not #rrggbb or an ANSI number", p.Name, n, fields[n])
		}
	}
	if len(p.Prefixes) == 0 {
		return fmt.Errorf("theme %q: prefixes: at least one colour needed", p.Name)
	}
	for i, c := range p.Prefixes {
		if !colourRE().MatchString(c) {
			return fmt.Errorf("theme %q: prefixes[%d] = %q is not a colour", p.Name, i, c)
		}
	}
	return nil
}

// ParsePalette decodes and validates one theme file.
func ParsePalette(data []byte) (Palette, error) {
	var p Palette
	if err := json.Unmarshal(data, &p); err != nil {
		return Palette{}, fmt.Errorf("parse theme: %w", err)
	}
	if strings.TrimSpace(p.Name) == "" {
		return Palette{}, errors.New("parse theme: name is required")
	}
	return p, p.Validate()
}

// Builtin returns an embedded theme by name: "dark", "light" or "high-contrast".
func Builtin(name string) (Palette, error) {
	data, err := builtin.ReadFile("data/" + name + ".json")
	if err != nil {
		return Palette{}, fmt.Errorf("theme %q: no such built-in theme", name)
	}
	return ParsePalette(data)
}

// BuiltinNames lists the embedded themes.
func BuiltinNames() []string {
	ents, _ := fs.ReadDir(builtin, "data")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(out)
	return out
}

// Load finds a theme by name: a user theme "<dir>/<name>.json" wins over a built-in one. "auto" (or
// "") picks dark or light from darkBackground. dir may be empty.
func Load(name, dir string, darkBackground bool) (Palette, error) {
	if name == "" || name == "auto" {
		if darkBackground {
			name = "dark"
		} else {
			name = "light"
		}
	}
	if dir != "" && !strings.ContainsAny(name, `/\`) && name != "." && name != ".." {
		data, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err == nil {
			p, err := ParsePalette(data)
			if err != nil {
				return Palette{}, fmt.Errorf("user theme %s: %w", filepath.Join(dir, name+".json"), err)
			}
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Palette{}, fmt.Errorf("user theme %q: %w", name, err)
		}
	}
	return Builtin(name)
}
