// Package components holds the widgets every screen builds its tables from: List (cursor, paging,
// filter, sort and selection over a screen's rows), Tabs (a tab strip) and Layout (column widths
// that give way by priority on a narrow terminal).
//
// A component keeps navigation state only: the rows and how to draw them stay with the screen.
// Keys reach it through keymap bindings (key.Matches), never literal strings; it draws with the
// shared themes.Styles; it must never call the bridge, hold a goroutine, or keep package state.
package components
