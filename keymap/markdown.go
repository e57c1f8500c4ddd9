package keymap

import (
	"strings"
)

var screenTitles = map[Screen]string{
	Global:    "Everywhere",
	Lists:     "Tables (sandboxes; processes, terminals and incarnations tabs)",
	Sandboxes: "Sandboxes screen",
	Sandbox:   "Sandbox screen",
	Runs:      "All-runs screen (every process and terminal of every known sandbox; the table keys work too)",
	Logs:      "Log view",
	Terminal:  "Terminals (embedded pane; attach, interrupt and terminate also on the Terminals tab)",
	Prompt:    "Prompts and confirmations",
}

// Markdown renders the whole key table, one section per screen, as the README shows it. The
// "name" column is what a user writes in the config's key overrides.
func (k *KeyMap) Markdown() string {
	var sb strings.Builder
	entries := k.entries()
	for i, s := range screenOrder {
		if i > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("### " + screenTitles[s] + "\n\n")
		sb.WriteString("| Keys | Action | Name |\n|---|---|---|\n")
		for _, e := range entries {
			if e.screen != s {
				continue
			}
			keys := make([]string, 0, len(e.b.Keys()))
			for _, kk := range e.b.Keys() {
				if kk == " " {
					kk = "space"
				}
				keys = append(keys, "`"+mdEscape(kk)+"`")
			}
			sb.WriteString("| " + strings.Join(keys, " ") + " | " + mdEscape(e.b.Help().Desc) + " | `" + e.name + "` |\n")
		}
	}
	return sb.String()
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
