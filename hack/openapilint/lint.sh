#!/usr/bin/env bash
# Lints webserver/openapi.json with Redocly CLI, pinned by package-lock.json beside this script
# (installed here with npm ci when missing or stale; node and npm are the only requirements).
# Every rule of Redocly's recommended set: errors fail, and so does any warning not justified
# in .redocly.lint-ignore.yaml.
set -euo pipefail
cd "$(dirname "$0")"
lock=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.ltiop-lock 2>/dev/null)" != "$lock" ]; then
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock" >node_modules/.ltiop-lock
fi
out=$(node_modules/.bin/redocly lint --config redocly.yaml --max-problems 1000 ../../webserver/openapi.json 2>&1) || {
  printf '%s\n' "$out"
  exit 1
}
# Warnings do not fail redocly itself: any left unjustified fails here.
if grep -qE '^\[[0-9]+\]|with [0-9]+ warnings?|You have [0-9]+ warnings?' <<<"$out"; then
  printf '%s\n' "$out"
  echo "lint-openapi: warnings not justified in hack/openapilint/.redocly.lint-ignore.yaml" >&2
  exit 1
fi
echo "openapi.json: Redocly lint clean ($(grep -oE '[0-9]+ problems? (is|are) explicitly ignored' <<<"$out" || echo 'nothing ignored'))"
