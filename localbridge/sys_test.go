package localbridge_test

import (
	"encoding/json"
	"syscall"
)

func syscall_alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
