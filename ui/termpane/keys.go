package termpane

import (
	tea "github.com/charmbracelet/bubbletea"
	uv "github.com/charmbracelet/ultraviolet"
)

// encodeKey turns a Bubble Tea key into what the remote terminal expects. Keys whose encoding
// depends on the remote program's modes (cursor keys, Home/End) go through the emulator, which
// knows those modes; the rest are fixed xterm sequences.
func encodeKey(k tea.KeyMsg) (input, bool) {
	alt := func(b []byte) []byte {
		if k.Alt {
			return append([]byte{0x1b}, b...)
		}
		return b
	}
	if k.Paste {
		return input{paste: string(k.Runes)}, len(k.Runes) > 0
	}
	switch t := k.Type; {
	case t == tea.KeyRunes:
		if len(k.Runes) == 0 {
			return input{}, false
		}
		return input{raw: alt([]byte(string(k.Runes)))}, true
	case t == tea.KeySpace:
		return input{raw: alt([]byte{' '})}, true
	case t >= 0 && t <= 127:
		// Control characters: Bubble Tea's key type is the byte itself (enter 13, tab 9,
		// backspace 127, esc 27, ctrl+a 1 …).
		return input{raw: alt([]byte{byte(t)})}, true
	}
	var mod uv.KeyMod
	if k.Alt {
		mod = uv.ModAlt
	}
	switch k.Type {
	case tea.KeyUp:
		return input{key: uv.KeyPressEvent{Code: uv.KeyUp, Mod: mod}}, true
	case tea.KeyDown:
		return input{key: uv.KeyPressEvent{Code: uv.KeyDown, Mod: mod}}, true
	case tea.KeyRight:
		return input{key: uv.KeyPressEvent{Code: uv.KeyRight, Mod: mod}}, true
	case tea.KeyLeft:
		return input{key: uv.KeyPressEvent{Code: uv.KeyLeft, Mod: mod}}, true
	case tea.KeyHome:
		return input{key: uv.KeyPressEvent{Code: uv.KeyHome, Mod: mod}}, true
	case tea.KeyEnd:
		return input{key: uv.KeyPressEvent{Code: uv.KeyEnd, Mod: mod}}, true
	}
	if seq, ok := fixedSeqs[k.Type]; ok {
		return input{raw: alt([]byte(seq))}, true
	}
	return input{}, false
}

// fixedSeqs are xterm's encodings of keys that do not depend on terminal modes.
var fixedSeqs = map[tea.KeyType]string{
	tea.KeyShiftTab:   "\x1b[Z",
	tea.KeyInsert:     "\x1b[2~",
	tea.KeyDelete:     "\x1b[3~",
	tea.KeyPgUp:       "\x1b[5~",
	tea.KeyPgDown:     "\x1b[6~",
	tea.KeyCtrlPgUp:   "\x1b[5;5~",
	tea.KeyCtrlPgDown: "\x1b[6;5~",

	tea.KeyShiftUp: "\x1b[1;2A", tea.KeyShiftDown: "\x1b[1;2B", tea.KeyShiftRight: "\x1b[1;2C", tea.KeyShiftLeft: "\x1b[1;2D",
	tea.KeyShiftHome: "\x1b[1;2H", tea.KeyShiftEnd: "\x1b[1;2F",
	tea.KeyCtrlUp: "\x1b[1;5A", tea.KeyCtrlDown: "\x1b[1;5B", tea.KeyCtrlRight: "\x1b[1;5C", tea.KeyCtrlLeft: "\x1b[1;5D",
	tea.KeyCtrlHome: "\x1b[1;5H", tea.KeyCtrlEnd: "\x1b[1;5F",
	tea.KeyCtrlShiftUp: "\x1b[1;6A", tea.KeyCtrlShiftDown: "\x1b[1;6B", tea.KeyCtrlShiftRight: "\x1b[1;6C", tea.KeyCtrlShiftLeft: "\x1b[1;6D",
	tea.KeyCtrlShiftHome: "\x1b[1;6H", tea.KeyCtrlShiftEnd: "\x1b[1;6F",

	tea.KeyF1: "\x1bOP", tea.KeyF2: "\x1bOQ", tea.KeyF3: "\x1bOR", tea.KeyF4: "\x1bOS",
	tea.KeyF5: "\x1b[15~", tea.KeyF6: "\x1b[17~", tea.KeyF7: "\x1b[18~", tea.KeyF8: "\x1b[19~",
	tea.KeyF9: "\x1b[20~", tea.KeyF10: "\x1b[21~", tea.KeyF11: "\x1b[23~", tea.KeyF12: "\x1b[24~",
	tea.KeyF13: "\x1b[1;2P", tea.KeyF14: "\x1b[1;2Q", tea.KeyF15: "\x1b[1;2R", tea.KeyF16: "\x1b[1;2S",
	tea.KeyF17: "\x1b[15;2~", tea.KeyF18: "\x1b[17;2~", tea.KeyF19: "\x1b[18;2~", tea.KeyF20: "\x1b[19;2~",
}

// encodeMouse turns a Bubble Tea mouse event at pane cell (x, y) into an emulator mouse event. The
// emulator sends it only when the remote program asked for mouse reports, in the encoding it chose.
func encodeMouse(m tea.MouseMsg, x, y int) (uv.MouseEvent, bool) {
	var mod uv.KeyMod
	if m.Shift {
		mod |= uv.ModShift
	}
	if m.Alt {
		mod |= uv.ModAlt
	}
	if m.Ctrl {
		mod |= uv.ModCtrl
	}
	var b uv.MouseButton
	switch m.Button {
	case tea.MouseButtonLeft:
		b = uv.MouseLeft
	case tea.MouseButtonMiddle:
		b = uv.MouseMiddle
	case tea.MouseButtonRight:
		b = uv.MouseRight
	case tea.MouseButtonWheelUp:
		b = uv.MouseWheelUp
	case tea.MouseButtonWheelDown:
		b = uv.MouseWheelDown
	case tea.MouseButtonWheelLeft:
		b = uv.MouseWheelLeft
	case tea.MouseButtonWheelRight:
		b = uv.MouseWheelRight
	case tea.MouseButtonNone:
		b = uv.MouseNone
	default:
		return nil, false
	}
	ev := uv.Mouse{X: x, Y: y, Button: b, Mod: mod}
	switch {
	case tea.MouseEvent(m).IsWheel():
		return uv.MouseWheelEvent(ev), true
	case m.Action == tea.MouseActionPress:
		return uv.MouseClickEvent(ev), true
	case m.Action == tea.MouseActionRelease:
		return uv.MouseReleaseEvent(ev), true
	case m.Action == tea.MouseActionMotion:
		return uv.MouseMotionEvent(ev), true
	}
	return nil, false
}
