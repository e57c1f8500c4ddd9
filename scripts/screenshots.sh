#!/usr/bin/env bash
# screenshots.sh regenerates screenshots/*.png from a real run of sandscope: it builds the binary,
# starts a local bridge (`sandscope serve`) in throw-away XDG state/cache/config directories, fills
# it with the demo scene (`sandscope demo`), drives the real TUI in a detached tmux session with
# send-keys, captures each screen with `capture-pane -p -e` and renders the captures with freeze.
#
# Usage: scripts/screenshots.sh [OUTDIR]        (default OUTDIR: screenshots/ in the repository)
#
# Screens: sandboxes.png (the list), sandbox.png (processes with a LOST and STALE entries after a
# container replacement), incarnations.png (the timeline with two incarnations), logs.png (the
# agent's JSONL with the LOST marker), preview.png (the sandbox screen's preview of the running
# agent), runs.png (every run of every sandbox), notifications.png (the notification list after the
# replacement), terminal.png (the embedded terminal pane) and stable.png (the sandbox screen on a
# second bridge, `sandscope serve --dialect stable` in directories of its own: a sandbox added by
# ID, a command run with `e` after the wake question, its run EXITED 3 in the Runs tab beside the
# preview).
#
# It installs what is missing: tmux, librsvg2-bin (rsvg-convert) and fonts-dejavu-core with apt-get
# when run as root (or with passwordless sudo), and freeze with
# `go install github.com/charmbracelet/freeze@v0.2.2`. Every process it starts is ended on exit,
# and the temporary directories are removed (set KEEP_WORK=1 to keep them for debugging).
# The bridge token is random per run and travels only in the environment, never in argv.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/screenshots}
FREEZE_VERSION=v0.2.2
COLS=160
ROWS=48
WAIT=${SCREENSHOT_WAIT:-120} # seconds any one screen may take to appear (a guard against hangs)

log() { printf 'screenshots: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# --- tools -------------------------------------------------------------------------------------

APT_UPDATED=
apt_install() {
	local sudo=
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
			sudo="sudo -n"
		else
			die "missing $*: install it (apt-get install $*) or rerun as root"
		fi
	fi
	command -v apt-get >/dev/null 2>&1 || die "missing $* and no apt-get to install it with"
	if [ -z "$APT_UPDATED" ]; then
		log "apt-get update"
		$sudo apt-get update -qq >/dev/null
		APT_UPDATED=1
	fi
	log "installing $*"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_tools() {
	command -v go >/dev/null 2>&1 || die "go is required"
	command -v tmux >/dev/null 2>&1 || apt_install tmux
	command -v rsvg-convert >/dev/null 2>&1 || apt_install librsvg2-bin
	command -v fc-list >/dev/null 2>&1 || apt_install fontconfig
	fc-list 2>/dev/null | grep -qi "DejaVu Sans Mono" || apt_install fonts-dejavu-core

	local gobin
	gobin=$(go env GOBIN)
	if [ -z "$gobin" ]; then
		gobin=$(go env GOPATH)
		gobin=${gobin%%:*}/bin # go install writes to the first GOPATH entry
	fi
	export PATH="$gobin:$PATH"
	if ! freeze --version 2>/dev/null | grep -qF "$FREEZE_VERSION"; then
		log "installing freeze $FREEZE_VERSION"
		GOFLAGS='' go install "github.com/charmbracelet/freeze@$FREEZE_VERSION"
	fi
	freeze --version 2>/dev/null | grep -qF "$FREEZE_VERSION" || die "freeze $FREEZE_VERSION not found on PATH after install"
}

# --- processes and cleanup -----------------------------------------------------------------------

WORK=
SERVE_PID=
STABLE_PID=
DEMO_PID=
TMUX_SOCK=

cleanup() {
	local rc=$?
	set +e
	if [ -n "$TMUX_SOCK" ] && [ -S "$TMUX_SOCK" ]; then
		tmux -S "$TMUX_SOCK" kill-server 2>/dev/null
	fi
	for pid in $DEMO_PID $SERVE_PID $STABLE_PID; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			for _ in $(seq 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	if [ -n "$WORK" ]; then
		# kept when asked, or after a failure (its logs say why) unless KEEP_WORK=0
		if [ "${KEEP_WORK:-}" = 1 ] || { [ $rc != 0 ] && [ "${KEEP_WORK:-}" != 0 ]; }; then
			log "work directory kept: $WORK"
		else
			rm -rf "$WORK"
		fi
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tmx() { tmux -S "$TMUX_SOCK" "$@"; }

# pane prints the pane as text; pane_ansi with its colours.
pane() { tmx capture-pane -p -t shot; }
pane_ansi() { tmx capture-pane -p -e -N -t shot; } # -N: keep trailing cells (the header band)

# wait_for TEXT...: poll the pane until it shows every TEXT (fixed strings).
wait_for() {
	local deadline=$((SECONDS + WAIT)) cap ok w
	while :; do
		cap=$(pane) || die "the TUI's tmux pane is gone (see $WORK)"
		ok=1
		for w in "$@"; do
			if ! grep -qF -- "$w" <<<"$cap"; then
				ok=
				break
			fi
		done
		[ -n "$ok" ] && return 0
		if [ $SECONDS -ge $deadline ]; then
			printf '%s\n' "$cap" >&2
			die "the pane never showed: $*"
		fi
		sleep 0.2
	done
}

keys() { tmx send-keys -t shot "$@"; }
type_text() { tmx send-keys -t shot -l -- "$1"; }

# select_row TEXT: move the list cursor ("> " at the start of a line) onto the first list row
# (a line starting with "> " or two spaces) showing TEXT.
select_row() {
	local want=$1 cap cur row n
	cap=$(pane)
	cur=$(grep -n '^> ' <<<"$cap" | head -n1 | cut -d: -f1)
	row=$(grep -n -e '^> ' -e '^  ' <<<"$cap" | grep -F -- "$want" | head -n1 | cut -d: -f1)
	[ -n "$cur" ] || die "no list cursor on screen"
	[ -n "$row" ] || die "no row showing $want"
	n=$((row - cur))
	if [ $n -gt 0 ]; then
		for _ in $(seq $n); do keys j; done
	elif [ $n -lt 0 ]; then
		for _ in $(seq $((-n))); do keys k; done
	fi
	local deadline=$((SECONDS + 10))
	until pane | grep '^> ' | grep -qF -- "$want"; do
		[ $SECONDS -ge $deadline ] && die "cursor did not reach the row showing $want"
		sleep 0.1
	done
}

# shot NAME: capture the pane with its colours and render it to $OUT/NAME.png.
shot() {
	local name=$1
	sleep 1.5 # let the next frame (status ages, rates) settle
	pane_ansi >"$WORK/$name.ansi"
	freeze "$WORK/$name.ansi" --language ansi \
		--font.family "DejaVu Sans Mono" --font.size 14 --line-height 1.2 \
		--padding 20 --margin 0 --border.radius 8 --window \
		-o "$OUT/$name.png" >/dev/null
	log "wrote $OUT/$name.png"
}

# --- run -----------------------------------------------------------------------------------------

ensure_tools
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# Short: the demo agent runs this build of sandscope, so its path shows in the process list.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sandscope.XXXXXX")
TMUX_SOCK=$WORK/tmux.sock
mkdir -p "$WORK/state" "$WORK/cache" "$WORK/config"

log "building sandscope"
(cd "$ROOT" && go build -o "$WORK/sandscope" .)
BIN=$WORK/sandscope

# A sandscope isolated from the user's own: its own state, cache and config, a random token, no
# remote bridge settings, a fixed theme so every run looks the same.
unset SANDSCOPE_URL SANDSCOPE_CONTEXT SANDSCOPE_CONFIG TMUX
export XDG_STATE_HOME=$WORK/state XDG_CACHE_HOME=$WORK/cache XDG_CONFIG_HOME=$WORK/config
export SANDSCOPE_THEME=dark COLORTERM=truecolor
SANDBOX_API_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export SANDBOX_API_KEY

# bridge_url PID OUTFILE ERRFILE: wait for the serve with PID to announce its URL; print it.
bridge_url() {
	local pid=$1 out=$2 err=$3 url=
	for _ in $(seq 300); do
		url=$(sed -n 's/^sandscope local bridge listening on //p' "$out")
		[ -n "$url" ] && break
		kill -0 "$pid" 2>/dev/null || die "sandscope serve exited: $(cat "$err")"
		sleep 0.1
	done
	[ -n "$url" ] || die "sandscope serve did not announce its URL"
	printf '%s\n' "$url"
}

log "starting the local bridge"
"$BIN" serve --listen 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE_PID=$!
URL=$(bridge_url "$SERVE_PID" "$WORK/serve.out" "$WORK/serve.err")
log "bridge at $URL"

# A second, quieter sandbox so the list shows more than the demo.
"$BIN" exec nightly -- sh -c 'echo "nightly: 412 checks passed"' >/dev/null 2>>"$WORK/exec.err" ||
	die "sandscope exec failed: $(cat "$WORK/exec.err")"

log "starting the TUI in tmux (${COLS}x${ROWS})"
tmx -f /dev/null new-session -d -s shot -x $COLS -y $ROWS "exec '$BIN' --url '$URL' 2>'$WORK/tui.err'"
tmx set-option -t shot remain-on-exit on >/dev/null
wait_for "Sandboxes ("

log "starting the demo scene"
"$BIN" demo --replace-after 30s >"$WORK/demo.out" 2>"$WORK/demo.err" &
DEMO_PID=$!

# The sandbox screen, then the agent's log in the JSONL view, followed live through the
# container replacement so its LOST marker lands in the log.
wait_for "demo " "RUNNING"
select_row "demo "
keys Enter
wait_for "Processes (" "demo agent"
select_row "demo agent"
keys Enter
wait_for "Logs · demo"
keys J
wait_for "jsonl on" "assistant"
log "waiting for the container replacement (about 30 s after the demo started)"
wait_for "LOST: the process is gone"
shot logs

keys Escape
wait_for "incarnation #2" "--resume" "LOST"
shot sandbox

# The preview beside the list: the resumed agent's details and its output, live.
select_row "--resume"
keys p
wait_for "Preview · " "output   live"
shot preview
keys p

keys Tab Tab
wait_for "[Incarnations (2)]"
shot incarnations

keys Escape
wait_for "Sandboxes (2)" "nightly" "#2"
shot sandboxes

# Every run of every sandbox at once, and the notifications the replacement raised.
keys W
wait_for "All runs (" "LOST"
shot runs
keys Escape
wait_for "Sandboxes (2)"
keys M
wait_for "Notifications (" "LOST"
shot notifications
keys Escape
wait_for "Sandboxes (2)"

# The embedded terminal pane on the new container's shell.
select_row "demo "
keys Enter
wait_for "Sandbox demo"
for _ in 1 2 3; do
	pane | grep -qF "[Terminals (" && break
	keys Tab
	sleep 0.3
done
wait_for "[Terminals ("
select_row "RUNNING"
keys Enter
wait_for "focused"
wait_for 'demo$'
type_text 'mkdir -p src && printf "export const total = 81;\n" > src/checkout.ts && ls -l --color=always && cat src/checkout.ts && echo "exit $?"'
keys Enter
wait_for "exit 0"
shot terminal
keys C-]
sleep 0.3
keys Escape
wait_for "[Terminals ("

# quit_tui: quit sandscope (it asks first when something is still open); either way the pane must end.
quit_tui() {
	keys q
	local deadline=$((SECONDS + WAIT))
	until [ "$(tmx display-message -p -t shot '#{pane_dead}' 2>/dev/null || echo 1)" = 1 ]; do
		if pane | grep -qF "Quit sandscope?"; then
			keys y
		fi
		[ $SECONDS -ge $deadline ] && die "sandscope did not quit"
		sleep 0.2
	done
	tmx kill-session -t shot 2>/dev/null || true # the last session: its tmux server ends with it
}
quit_tui

# --- a stable (0.12) bridge ------------------------------------------------------------------------

# A second local bridge speaking the stable API, with state, cache and config of its own (the
# sandboxes, the record and the wake answers start empty); the TUI beside it uses the same
# directories. The token stays the one in the environment.
SW=$WORK/stable
mkdir -p "$SW/state" "$SW/cache" "$SW/config"
log "starting the stable bridge"
XDG_STATE_HOME=$SW/state XDG_CACHE_HOME=$SW/cache XDG_CONFIG_HOME=$SW/config \
	"$BIN" serve --dialect stable --listen 127.0.0.1:0 >"$SW/serve.out" 2>"$SW/serve.err" &
STABLE_PID=$!
STABLE_URL=$(bridge_url "$STABLE_PID" "$SW/serve.out" "$SW/serve.err")
log "stable bridge at $STABLE_URL"

tmx -f /dev/null new-session -d -s shot -x $COLS -y $ROWS \
	"exec env XDG_STATE_HOME='$SW/state' XDG_CACHE_HOME='$SW/cache' XDG_CONFIG_HOME='$SW/config' '$BIN' --url '$STABLE_URL' 2>'$SW/tui.err'"
tmx set-option -t shot remain-on-exit on >/dev/null
wait_for "Sandboxes (0)"

# A sandbox added by ID (stable lists none without starting containers), opened, and a command
# run through the exec prompt: the first action asks before it starts the container.
keys a
wait_for "Add sandboxes by ID"
type_text release
keys Enter
wait_for "Sandboxes (1)" "release"
select_row "release"
keys Enter
wait_for "Sandbox release" "[Runs (0)]" "Sessions (0)" "Incarnations (0)"
keys e
wait_for "Run a process in release"
type_text "sh -c 'echo building; echo tests: 41 passed, 1 failed; exit 3'"
keys Enter
wait_for "Start the container of release?"
keys y
wait_for "[Runs (1)]" "EXITED 3"
select_row "EXITED 3"
keys p
wait_for "Preview · " "ended: EXITED 3"
shot stable
quit_tui

log "done: $OUT/{sandboxes,sandbox,preview,incarnations,runs,notifications,logs,terminal,stable}.png"
