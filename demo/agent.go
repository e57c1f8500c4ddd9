package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Line is one line of the demo agent's output and the pause before it.
type Line struct {
	Delay time.Duration
	Text  string // one JSON object, no newline
}

// The agent's stream follows the shape of Claude Code's `--output-format stream-json`: a system
// init line, assistant messages holding text or tool_use blocks, user messages holding tool_result
// blocks, and a final result line.

type agentMessage struct {
	Type      string       `json:"type"`
	Subtype   string       `json:"subtype,omitempty"`
	Message   *chatMessage `json:"message,omitempty"`
	SessionID string       `json:"session_id"`

	// system/init
	Cwd   string   `json:"cwd,omitempty"`
	Model string   `json:"model,omitempty"`
	Tools []string `json:"tools,omitempty"`

	// result
	IsError      *bool   `json:"is_error,omitempty"`
	DurationMS   int     `json:"duration_ms,omitempty"`
	NumTurns     int     `json:"num_turns,omitempty"`
	Result       string  `json:"result,omitempty"`
	TotalCostUSD float64 `json:"total_cost_usd,omitempty"`
}

type chatMessage struct {
	ID      string         `json:"id,omitempty"`
	Type    string         `json:"type,omitempty"`
	Role    string         `json:"role"`
	Model   string         `json:"model,omitempty"`
	Content []contentBlock `json:"content"`
}

type contentBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text,omitempty"`
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Input     map[string]any `json:"input,omitempty"`
	ToolUseID string         `json:"tool_use_id,omitempty"`
	Content   string         `json:"content,omitempty"`
	IsError   bool           `json:"is_error,omitempty"`
}

const (
	agentModel   = "claude-sonnet-4-5"
	agentSession = "5f0c6a52-demo-4c1e-9b7a-2a7d1e0c3b11"
)

// AgentScript returns the demo agent's lines. resumed marks the run that relaunches the agent in a
// new container after its first run was lost. The whole run takes about three minutes at speed 1.
func AgentScript(resumed bool) []Line {
	var lines []Line
	turn := 0
	add := func(delay time.Duration, m agentMessage) {
		m.SessionID = agentSession
		b, err := json.Marshal(m)
		if err != nil {
			// Static data of known types: cannot fail; keep the stream well-formed regardless.
			b = []byte(`{"type":"system","subtype":"error"}`)
		}
		// The pauses below are written at two thirds of their real length.
		lines = append(lines, Line{Delay: delay * 3 / 2, Text: string(b)})
	}
	say := func(delay time.Duration, text string) {
		turn++
		add(delay, agentMessage{Type: "assistant", Message: &chatMessage{
			ID: fmt.Sprintf("msg_demo_%02d", turn), Type: "message", Role: "assistant", Model: agentModel,
			Content: []contentBlock{{Type: "text", Text: text}},
		}})
	}
	tool := 0
	use := func(delay time.Duration, name string, input map[string]any, resultDelay time.Duration, result string, isErr bool) {
		turn++
		tool++
		id := fmt.Sprintf("toolu_demo_%02d", tool)
		add(delay, agentMessage{Type: "assistant", Message: &chatMessage{
			ID: fmt.Sprintf("msg_demo_%02d", turn), Type: "message", Role: "assistant", Model: agentModel,
			Content: []contentBlock{{Type: "tool_use", ID: id, Name: name, Input: input}},
		}})
		add(resultDelay, agentMessage{Type: "user", Message: &chatMessage{
			Role:    "user",
			Content: []contentBlock{{Type: "tool_result", ToolUseID: id, Content: result, IsError: isErr}},
		}})
	}

	add(300*time.Millisecond, agentMessage{Type: "system", Subtype: "init", Cwd: "/workspace", Model: agentModel,
		Tools: []string{"Bash", "Edit", "Glob", "Grep", "Read", "Write"}})
	if resumed {
		say(2*time.Second, "The previous container went away mid-task, so its process and logs are gone. "+
			"Starting again from the repository state: re-checking the failing checkout test first.")
	} else {
		say(2*time.Second, "I'll fix the failing checkout test. First, the test output and the code under test.")
	}
	use(3*time.Second, "Bash", map[string]any{"command": "npm test -- src/checkout.test.ts", "description": "Run the failing test"},
		6*time.Second, "FAIL src/checkout.test.ts > applies discount codes\nAssertionError: expected 90 to be 81\n"+
			"Tests  1 failed | 23 passed (24)", true)
	use(4*time.Second, "Read", map[string]any{"file_path": "/workspace/src/checkout.ts"},
		time.Second, "  1\timport { Cart } from './cart'\n  2\t\n  3\texport function applyDiscount(cart: Cart, code: string): number {\n"+
			"  4\t  const pct = DISCOUNTS[code] ?? 0\n  5\t  return cart.total - pct\n  6\t}", false)
	say(7*time.Second, "Found it: applyDiscount subtracts the percentage as an absolute amount. "+
		"A 10% code on a 90.00 cart should give 81.00, not 80.00 — and the test's 90 means the code was not applied at all. "+
		"Checking how codes are looked up.")
	use(4*time.Second, "Grep", map[string]any{"pattern": "DISCOUNTS", "path": "/workspace/src", "output_mode": "content"},
		time.Second, "src/discounts.ts:3:export const DISCOUNTS: Record<string, number> = {\n"+
			"src/discounts.ts:4:  SAVE10: 10,\nsrc/checkout.ts:4:  const pct = DISCOUNTS[code] ?? 0", false)
	use(5*time.Second, "Read", map[string]any{"file_path": "/workspace/src/checkout.test.ts", "offset": 40, "limit": 12},
		time.Second, " 40\tit('applies discount codes', () => {\n 41\t  const cart = cartWith(90)\n"+
			" 42\t  expect(applyDiscount(cart, 'save10')).toBe(81)\n 43\t})", false)
	say(8*time.Second, "Two bugs: codes are matched case-sensitively ('save10' vs 'SAVE10'), and the percentage is "+
		"subtracted as an amount. Fixing both, keeping cents exact.")
	use(4*time.Second, "Edit", map[string]any{
		"file_path":  "/workspace/src/checkout.ts",
		"old_string": "  const pct = DISCOUNTS[code] ?? 0\n  return cart.total - pct",
		"new_string": "  const pct = DISCOUNTS[code.toUpperCase()] ?? 0\n  return Math.round(cart.total * (100 - pct)) / 100",
	}, 2*time.Second, "The file /workspace/src/checkout.ts has been updated.", false)
	use(5*time.Second, "Bash", map[string]any{"command": "npm test -- src/checkout.test.ts", "description": "Re-run the test"},
		9*time.Second, "✓ src/checkout.test.ts (6 tests) 41ms\nTests  6 passed (6)", false)
	say(6*time.Second, "The checkout tests pass. Running the whole suite to make sure nothing else relied on the old behaviour.")
	use(4*time.Second, "Bash", map[string]any{"command": "npm test", "description": "Run all tests", "timeout": 600000},
		25*time.Second, "Test Files  9 passed (9)\nTests  24 passed (24)\nDuration  4.81s", false)
	use(5*time.Second, "Write", map[string]any{"file_path": "/workspace/NOTES.md",
		"content": "Discount codes are case-insensitive; percentages apply to the cart total, rounded to cents.\n"},
		time.Second, "File created successfully at: /workspace/NOTES.md", false)
	use(4*time.Second, "Bash", map[string]any{"command": "git diff --stat", "description": "Summarise the change"},
		2*time.Second, " src/checkout.ts | 4 ++--\n NOTES.md        | 1 +\n 2 files changed, 3 insertions(+), 2 deletions(-)", false)
	summary := "Fixed applyDiscount: codes are matched case-insensitively and the percentage is applied to the " +
		"total (rounded to cents). All 24 tests pass; the rule is noted in NOTES.md."
	say(8*time.Second, summary)
	isErr := false
	add(2*time.Second, agentMessage{Type: "result", Subtype: "success", IsError: &isErr, DurationMS: 168_400,
		NumTurns: turn, Result: summary, TotalCostUSD: 0.4213})
	return lines
}

// AgentDuration is how long the agent runs at speed 1.
func AgentDuration(resumed bool) time.Duration {
	var d time.Duration
	for _, l := range AgentScript(resumed) {
		d += l.Delay
	}
	return d
}

// WriteAgent prints the agent's lines to w with their pacing divided by speed (speed ≤ 0 means 1).
// It stops early, returning ctx's error, when ctx ends.
func WriteAgent(ctx context.Context, w io.Writer, speed float64, resumed bool) error {
	if speed <= 0 {
		speed = 1
	}
	for _, l := range AgentScript(resumed) {
		if err := sleep(ctx, scale(l.Delay, speed)); err != nil {
			return err
		}
		if _, err := io.WriteString(w, l.Text+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// AgentShellScript is the agent as a POSIX sh script (printf and sleep only), for bridges whose
// containers do not have the sandscope binary.
func AgentShellScript(speed float64, resumed bool) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, l := range AgentScript(resumed) {
		if s := shellSeconds(scale(l.Delay, speed)); s != "" {
			b.WriteString("sleep " + s + "\n")
		}
		b.WriteString("printf '%s\\n' " + shellQuote(l.Text) + "\n")
	}
	return b.String()
}

func scale(d time.Duration, speed float64) time.Duration {
	if speed <= 0 {
		speed = 1
	}
	return time.Duration(float64(d) / speed)
}

// shellSeconds renders d for sleep(1) with millisecond precision; "" for less than a millisecond.
func shellSeconds(d time.Duration) string {
	ms := d.Milliseconds()
	if ms <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%03d", ms/1000, ms%1000)
}

// shellQuote single-quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
