#!/usr/bin/env bash
# Smoke test of `make run`, as a newcomer would use it: start it on a fresh state folder, wait for /healthz to
# answer 200 (database, broker and a live worker), fetch the login page, log in as the first admin, then stop the
# whole process group and check that nothing is left behind. Used by .ci/run; runs on its own too.
#
#   scripts/smoke_make_run.sh            # SMOKE_BIND=127.0.0.1:8000, SMOKE_TIMEOUT=120 (seconds for /healthz)
set -euo pipefail
cd "$(dirname "$0")/.."

bind="${SMOKE_BIND:-127.0.0.1:8000}"
url="http://$bind"
healthz_timeout="${SMOKE_TIMEOUT:-120}"
prepare_timeout="${SMOKE_PREPARE_TIMEOUT:-600}" # install (first time), migrate, collectstatic, load_catalog

work="$(mktemp -d)"
log="$work/make-run.log"
cookies="$work/cookies.txt"
pgid=""

# A fresh installation: an empty database and broker in a temporary folder, so the first admin is created now.
export DOSSIER_VAR_DIR="$work/var"
export DOSSIER_ADMIN_PASSWORD="smoke-${RANDOM}-$(date +%s)-ledger"

say() { echo "smoke: $*"; }

fail() {
	say "FAILED: $*"
	say "last lines of the make run output:"
	tail -n 60 "$log" | sed 's/^/    /' || true
	exit 1
}

running() { [ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null; }

stop() {
	running || return 0
	say "stopping make run (process group $pgid)"
	kill -TERM -- "-$pgid" 2>/dev/null || true
	for _ in $(seq 1 30); do
		running || return 0
		sleep 1
	done
	say "still running 30 s after SIGTERM; sending SIGKILL"
	kill -KILL -- "-$pgid" 2>/dev/null || true
	return 1
}

cleanup() {
	stop || true
	rm -rf "$work"
}
trap cleanup EXIT

status_of() { curl --silent --output "${2:-/dev/null}" --write-out '%{http_code}' --max-time 10 "$1" || true; }

if [ "$(status_of "$url/healthz")" != "000" ]; then
	say "something already answers on $bind; set SMOKE_BIND to a free address"
	exit 1
fi

say "starting make run on $bind (state in $DOSSIER_VAR_DIR)"
# A non-interactive shell starts background jobs in its own process group, so setsid does not fork: $! is the
# leader of a new process group holding make and scripts/run_procfile.py (gunicorn and celery run in sessions of
# their own, so the runner stops them when SIGTERM reaches it).
: >"$log"
setsid make run BIND="$bind" >"$log" 2>&1 </dev/null &
pgid=$!
for _ in $(seq 1 50); do # until the child has called setsid
	running && break
	sleep 0.1
done

started=$SECONDS
until grep -q "Dossier is starting on" "$log"; do
	running || fail "make run exited before starting the servers"
	[ $((SECONDS - started)) -lt "$prepare_timeout" ] || fail "make run did not finish preparing in ${prepare_timeout} s"
	sleep 1
done
say "prepared in $((SECONDS - started)) s"
grep -q "Log in at $url/accounts/login/" "$log" || fail "make run did not print where to log in"

serving=$SECONDS
until [ "$(status_of "$url/healthz" "$work/healthz.json")" = "200" ]; do
	running || fail "make run exited while starting"
	if [ $((SECONDS - serving)) -ge "$healthz_timeout" ]; then
		fail "/healthz not 200 within ${healthz_timeout} s; last answer: $(cat "$work/healthz.json" 2>/dev/null)"
	fi
	sleep 2
done
say "/healthz 200 after $((SECONDS - serving)) s: $(cat "$work/healthz.json")"

login_status="$(curl --silent --cookie-jar "$cookies" --output "$work/login.html" --write-out '%{http_code}' \
	--max-time 10 "$url/accounts/login/")"
[ "$login_status" = "200" ] || fail "/accounts/login/ answered $login_status"
grep -q 'name="password"' "$work/login.html" || fail "/accounts/login/ has no password field"
say "/accounts/login/ 200"

csrf_token="$(awk '$6 == "csrftoken" { print $7 }' "$cookies")"
[ -n "$csrf_token" ] || fail "the login page set no CSRF cookie"
signin_status="$(curl --silent --cookie "$cookies" --cookie-jar "$cookies" --output /dev/null \
	--write-out '%{http_code} %{redirect_url}' --max-time 10 --referer "$url/accounts/login/" \
	--data-urlencode "csrfmiddlewaretoken=$csrf_token" --data-urlencode "username=admin" \
	--data-urlencode "password=$DOSSIER_ADMIN_PASSWORD" "$url/accounts/login/")"
case "$signin_status" in
302\ *) ;;
*) fail "logging in as admin answered '$signin_status' instead of a redirect" ;;
esac
home_status="$(curl --silent --cookie "$cookies" --output "$work/home.html" --write-out '%{http_code}' --max-time 10 \
	"$url/")"
[ "$home_status" = "200" ] || fail "the home page answered $home_status to the signed-in admin"
say "logged in as admin; the home page answers 200"

stop || fail "make run did not stop on SIGTERM"
if [ "$(status_of "$url/healthz")" != "000" ]; then
	fail "something still answers on $bind after stopping"
fi
leftovers="$(pgrep -g "$pgid" || true)"
[ -z "$leftovers" ] || fail "processes left in the group: $leftovers"
if grep -q "SIGKILL" "$log"; then
	fail "a server needed SIGKILL to stop"
fi
grep -q "stopped cleanly" "$log" || fail "the runner did not report a clean stop"
say "stopped cleanly"
say "OK"
