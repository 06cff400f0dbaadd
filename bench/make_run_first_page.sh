#!/usr/bin/env bash
# How long `make run` takes on a fresh clone, from the command to the first page (the login page answering 200),
# as a newcomer meets it: a new .venv, pip's cache and the wheel folders as the machine has them (warm or not),
# an empty database. Prints the seconds of each stage; docs/PERFORMANCE.md keeps the figures.
#
#   bench/make_run_first_page.sh [REPO]      # REPO: what to clone (default: this checkout's committed HEAD)
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d)"
bind="127.0.0.1:${BENCH_PORT:-8765}"
pgid=""
stop() { # Ctrl-C as a user would: SIGTERM to the group, make run stops its servers and exits
	[ -n "$pgid" ] || return 0
	kill -TERM -- "-$pgid" 2>/dev/null || true
	wait "$pgid" 2>/dev/null || true
	rm -rf "$work"
}
trap stop EXIT

git clone --quiet "$repo" "$work/dossier"
cd "$work/dossier"
export DOSSIER_VAR_DIR="$work/var" DOSSIER_ADMIN_PASSWORD="bench-$RANDOM-$(date +%s)"
started=$(date +%s.%N)
setsid make run BIND="$bind" >"$work/make-run.log" 2>&1 </dev/null &
pgid=$!
elapsed() { echo "$(date +%s.%N) - $started" | bc; }
until grep -q "Dossier is starting on" "$work/make-run.log"; do
	kill -0 "$pgid" 2>/dev/null || { tail -40 "$work/make-run.log"; exit 1; }
	sleep 0.5
done
prepared=$(elapsed)
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$bind/accounts/login/")" = 200 ]; do
	kill -0 "$pgid" 2>/dev/null || { tail -40 "$work/make-run.log"; exit 1; }
	sleep 0.5
done
first_page=$(elapsed)
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$bind/healthz")" = 200 ]; do
	sleep 0.5
done
healthy=$(elapsed)
printf 'install + migrate + catalog (until "Dossier is starting"): %.1f s\n' "$prepared"
printf 'first page (login page answers 200):                    %.1f s\n' "$first_page"
printf 'healthy (/healthz 200: database, broker, live worker):  %.1f s\n' "$healthy"
