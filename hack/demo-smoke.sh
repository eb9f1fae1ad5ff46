#!/usr/bin/env bash
# Starts `make demo` unattended, runs the README's walk-through exactly as written (every
# bash block after a `<!-- walkthrough -->` marker), then stops the demo and checks that it
# cleaned up. CI runs it after `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export LTIOP_LISTEN=${LTIOP_LISTEN:-127.0.0.1:3000}
if curl -sf "http://$LTIOP_LISTEN/readyz" >/dev/null 2>&1; then
  echo "something already answers on $LTIOP_LISTEN: stop it or set LTIOP_LISTEN" >&2; exit 1
fi
log=$(mktemp)
script=$(mktemp)
setsid make demo >"$log" 2>&1 &
demo=$!
stop_demo() { kill -INT -- "-$demo" 2>/dev/null || true; }
trap 'stop_demo; rm -f "$script"' EXIT

for _ in $(seq 1 900); do
  if [ -f tmp/demo.env ] && curl -sf "http://$LTIOP_LISTEN/readyz" >/dev/null; then break; fi
  kill -0 "$demo" 2>/dev/null || { cat "$log"; echo "demo exited early" >&2; exit 1; }
  sleep 1
done
curl -sf "http://$LTIOP_LISTEN/readyz" >/dev/null || { cat "$log"; echo "demo not ready" >&2; exit 1; }

awk '/^<!-- walkthrough -->/{grab=1; next}
     grab && /^```bash/{inblock=1; next}
     inblock && /^```/{inblock=0; grab=0; next}
     inblock{print}' README.md >"$script"
echo "--- running the README walk-through ($(grep -c . "$script") lines)"
bash -euo pipefail "$script"
echo "--- walk-through passed"

stop_demo
for _ in $(seq 1 60); do kill -0 "$demo" 2>/dev/null || break; sleep 1; done
if kill -0 "$demo" 2>/dev/null; then cat "$log"; echo "demo did not stop on SIGINT" >&2; exit 1; fi
if [ -f tmp/demo.env ]; then echo "demo left tmp/demo.env behind" >&2; exit 1; fi
echo "--- demo stopped and cleaned up"
