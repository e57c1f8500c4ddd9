package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// NotifyKinds are the changes the TUI can signal beyond its own notification list (the keys of
// `notify:`): a watched process ended, was lost, turned SUSPECT END, or its stream got a gap.
var NotifyKinds = []string{"ended", "lost", "suspect", "gap"}

// NotifySignals are the accepted values under each `notify:` kind: the terminal bell, and a
// desktop notification through the terminal as OSC 9 (iTerm2, WezTerm, kitty, Windows Terminal,
// ghostty) or OSC 777 (urxvt, foot, Konsole, WezTerm, ghostty). "none" (or an empty list) signals
// nothing beyond the list and the status line.
var NotifySignals = []string{"bell", "osc9", "osc777", "none"}

// notify reads `notify:` — a mapping of kind → one signal or a list of signals.
func (p *parser) notify(c *Config, v *yaml.Node) map[string][]string {
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "notify must be a mapping of kind: [signal, …] (kinds: %s), not %s", strings.Join(NotifyKinds, ", "), kindName(v))
		return nil
	}
	out := map[string][]string{}
	for _, kv := range pairs(p, v) {
		kind := kv.key.Value
		c.lines["notify."+kind] = kv.key.Line
		if !contains(NotifyKinds, kind) {
			p.errorf(kv.key.Line, "notify: no kind %q (known: %s)", kind, strings.Join(NotifyKinds, ", "))
			continue
		}
		var items []*yaml.Node
		switch kv.value.Kind {
		case yaml.ScalarNode:
			if kv.value.Tag != "!!null" {
				items = []*yaml.Node{kv.value}
			}
		case yaml.SequenceNode:
			items = kv.value.Content
		default:
			p.errorf(kv.value.Line, "notify.%s must be a signal or a list of signals (%s), not %s", kind, strings.Join(NotifySignals, ", "), kindName(kv.value))
			continue
		}
		list := []string{}
		for _, item := range items {
			s, ok := p.str("notify."+kind+" entries", item)
			if !ok {
				continue
			}
			switch {
			case !contains(NotifySignals, s):
				p.errorf(item.Line, "notify.%s: %q is not one of %s", kind, s, strings.Join(NotifySignals, ", "))
			case s == "none" && len(items) > 1:
				p.errorf(item.Line, "notify.%s: \"none\" cannot be listed with other signals", kind)
			case s != "none" && !contains(list, s):
				list = append(list, s)
			}
		}
		out[kind] = list
	}
	return out
}
