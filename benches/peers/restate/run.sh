#!/usr/bin/env bash
# Installs (npm), starts a Restate server and the handlers, registers them, runs the bench
# (arguments go to bench.js, e.g. --only=b,d), and stops both. Data in a fresh temp dir.
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-audit --no-fund --silent
data=$(mktemp -d /tmp/restate-bench.XXXXXX)
# The server's own binary (npm's launcher would outlive a kill), from its platform package.
bin=$(node -p "require.resolve('@restatedev/restate-server-' + process.platform + '-' + process.arch + '/bin/restate-server')")
"$bin" --base-dir "$data" >"$data/server.log" 2>&1 &
server=$!
node service.js >"$data/service.log" 2>&1 &
service=$!
trap 'kill $service $server 2>/dev/null; wait 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 100); do
  curl -sf localhost:9070/health >/dev/null && break
  sleep 0.2
done
curl -sSf -X POST localhost:9070/deployments -H 'content-type: application/json' \
  -d '{"uri":"http://127.0.0.1:9080"}' >/dev/null
node bench.js "$@"
