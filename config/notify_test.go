package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestNotifySettings(t *testing.T) {
	_, _, e := resolvedFile(t, 0o600, "notify:\n  ended: bell\n  lost: [bell, osc9, osc777, bell]\n  suspect: none\n  gap: []\n")
	got := map[string]string{}
	for k, v := range e.Notify {
		got[k] = strings.Join(v, "+")
	}
	want := map[string]string{"ended": "bell", "lost": "bell+osc9+osc777", "suspect": "", "gap": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("notify.%s = %q, want %q", k, got[k], v)
		}
	}
	if e.NotifySource["lost"].Line != 3 || e.NotifySource["lost"].Kind != FromFile {
		t.Errorf("source of notify.lost: %+v", e.NotifySource["lost"])
	}
	rows := map[string]string{}
	for _, r := range e.Rows() {
		rows[r.Setting] = r.Value
	}
	if rows["notify.lost"] != "bell, osc9, osc777" || rows["notify.gap"] != "none" {
		t.Errorf("rows: %v", rows)
	}
	// without a file every kind is present and signals nothing
	e, err := (*Config)(nil).Resolve(Flags{}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range NotifyKinds {
		if v, ok := e.Notify[k]; !ok || len(v) != 0 {
			t.Errorf("default notify.%s = %v (present %v)", k, v, ok)
		}
	}
}

func TestNotifyErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"notify: bell\n", "notify must be a mapping"},
		{"notify:\n  ended: beep\n", `:2: notify.ended: "beep" is not one of bell, osc9, osc777, none`},
		{"notify:\n  finished: bell\n", `:2: notify: no kind "finished" (known: ended, lost, suspect, gap)`},
		{"notify:\n  lost: [bell, none]\n", `notify.lost: "none" cannot be listed with other signals`},
		{"notify:\n  lost: {a: b}\n", "notify.lost must be a signal or a list of signals"},
		{"notify:\n  gap: [1]\n", "notify.gap entries must be a string"},
	}
	for _, tc := range cases {
		path := writeConfig(t, 0o600, tc.text)
		_, err := Load(path)
		var ce *Error
		if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
		_ = os.Remove(path)
	}
}
