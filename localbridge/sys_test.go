package localbridge_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
)

// syscall_alive reports whether pid is a live (non-zombie) process.
func syscall_alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// groupAlive reports whether process group pgid has a live (non-zombie) member. Orphaned
// members are reaped by whatever runs as PID 1, which may leave zombies for a while.
func groupAlive(pgid int) bool {
	names, _ := os.ReadDir("/proc")
	want := strconv.Itoa(pgid)
	for _, n := range names {
		b, err := os.ReadFile("/proc/" + n.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
