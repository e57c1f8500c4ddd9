package client

import "time"

// Process is a process as the bridge reports it (ProcessStatus in the bridge's OpenAPI document).
// Incarnation is 0 when the bridge does not report one (the real bridge never does; sandscope's
// local bridge adds it as an extension).
type Process struct {
	ID          string     `json:"id"`
	PID         int        `json:"pid"`
	Command     []string   `json:"command"`
	Cwd         string     `json:"cwd,omitempty"`
	State       string     `json:"state"` // "running", "exited" or "error"
	StartedAt   time.Time  `json:"startedAt"`
	EndedAt     *time.Time `json:"endedAt,omitempty"`
	Exit        *Exit      `json:"exit,omitempty"`
	Error       *RunError  `json:"error,omitempty"`
	Incarnation int        `json:"incarnation,omitempty"`
}

// Terminal is a PTY terminal as the bridge reports it (TerminalSnapshot). Status is "running",
// "exited" or "error".
type Terminal struct {
	ID          string    `json:"id"`
	PID         int       `json:"pid"`
	Command     []string  `json:"command"`
	Cwd         string    `json:"cwd,omitempty"`
	Status      string    `json:"status"`
	Exit        *Exit     `json:"exit,omitempty"`
	Error       *RunError `json:"error,omitempty"`
	Incarnation int       `json:"incarnation,omitempty"`
}

// Exit is how a process or terminal ended. A signal death has Code 128+n and Signal n.
type Exit struct {
	Code     int  `json:"code"`
	Signal   int  `json:"signal,omitempty"`
	TimedOut bool `json:"timedOut"`
}

// RunError is the bridge's description of a process or terminal that ended in the "error" state.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ExecRequest launches a process (POST /v1/sandbox/{id}/processes). Timeout is in milliseconds;
// zero means none.
type ExecRequest struct {
	Argv    []string          `json:"argv"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Timeout int64             `json:"timeout,omitempty"`
}

// TerminalRequest creates a terminal (POST /v1/sandbox/{id}/terminals). Zero Cols/Rows mean the
// bridge default (80×24).
type TerminalRequest struct {
	Argv []string          `json:"argv,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	Cols int               `json:"cols,omitempty"`
	Rows int               `json:"rows,omitempty"`
}

// RunningStatus answers GET /v1/sandbox/{id}/running. Incarnation is 0 when not reported.
type RunningStatus struct {
	Running     bool `json:"running"`
	Incarnation int  `json:"incarnation,omitempty"`
	// IncarnationStarted is when the current container life began (an extension of sandscope's
	// local bridge; zero when not reported).
	IncarnationStarted time.Time `json:"incarnationStarted,omitzero"`
}

// SandboxInfo is one entry of the local bridge's sandbox list (GET /v1/sandbox, an extension the
// real bridge does not have).
type SandboxInfo struct {
	ID          string `json:"id"`
	Running     bool   `json:"running"`
	Incarnation int    `json:"incarnation,omitempty"`
	// IncarnationStarted is when the current container life began (zero when not reported).
	IncarnationStarted time.Time `json:"incarnationStarted,omitzero"`
	Processes          int       `json:"processes"`
	Terminals          int       `json:"terminals"`
	CreatedAt          time.Time `json:"createdAt"`
	LastActiveAt       time.Time `json:"lastActiveAt"`
}
