// Package themes holds sandscope's colours as data: a semantic palette (Primary, Faint, Error,
// Warning, Success, Border, Selected, Stdout, Stderr, Marker, …) with dark, light and high-contrast
// themes embedded as JSON, a loader for user theme files, background detection, and the Styles
// struct every screen renders with, including one style per state badge.
//
// Components never build colours themselves; they take a *Styles. This package must never keep a
// global theme or renderer: Styles are built once per program (or per test) and passed down.
package themes
