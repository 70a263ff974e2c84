#!/usr/bin/env bash
# Installs DBOS (pip, in a venv), starts a PostgreSQL of its own on port 5433 (initdb and
# pg_ctl from the PATH or Debian's /usr/lib/postgresql/*/bin; run as root it uses the postgres
# user), runs the bench (arguments go to bench.py, e.g. --only=d), and stops it.
set -euo pipefail
cd "$(dirname "$0")"
venv=${DBOS_VENV:-/tmp/dbos-bench-venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r requirements.txt
pgbin=$(dirname "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
data=$(mktemp -d /tmp/dbos-bench-pg.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else bash -c "$*"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$data"
as_pg "$pgbin/initdb -D $data -U postgres --auth=trust" >/dev/null
as_pg "$pgbin/pg_ctl -D $data -o '-p 5433 -k /tmp' -l $data/pg.log -w start" >/dev/null
trap 'as_pg "$pgbin/pg_ctl -D $data -m fast stop" >/dev/null; rm -rf "$data"' EXIT
"$venv/bin/python" bench.py "$@"
