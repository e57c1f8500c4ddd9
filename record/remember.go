package record

// AddKind is the action that puts a sandbox on the lists by its ID (`sandscope add`, the
// Sandboxes screen's add dialog): it has history from then on, so KnownSandboxes lists it.
const AddKind = "add"

// Remember records that the user added a sandbox by its ID; how says from where ("command",
// "stdin", "dialog"). A sandbox forgotten before is listed again.
func (r *Record) Remember(sandbox, how string) {
	r.Add(Event{Sandbox: sandbox, Source: FromAction, Kind: AddKind, Reason: how, Action: &Action{Kind: AddKind, Outcome: "ok"}})
}
