#!/usr/bin/env bash
# Starts `make demo` unattended, runs the README's walk-through exactly as written (every
# bash block after a `<!-- walkthrough -->` marker), then stops the demo and checks that it
# cleaned up. CI runs it after `make test`. LTIOP_DEMO_REPLICAS=3 runs it against three
# replicas behind the demo's round-robin proxy, and checks them and their redis-server too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export LTIOP_LISTEN=${LTIOP_LISTEN:-127.0.0.1:3000}
replicas=${LTIOP_DEMO_REPLICAS:-1}
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

redis_port=""
if [ "$replicas" -gt 1 ]; then
  for i in $(seq 1 "$replicas"); do
    url=$(sed -n "s|^replica $i: \(http://[0-9.:]*\)\$|\1|p" "$log")
    if [ -z "$url" ] || ! curl -sf "$url/readyz" >/dev/null; then
      cat "$log"; echo "replica $i did not print its URL or does not answer there" >&2; exit 1
    fi
  done
  leader=$(sed -n 's/^replica \([0-9]*\) leads the controllers.*/\1/p' "$log" | tail -1)
  if [ -z "$leader" ] || [ "$leader" -lt 1 ] || [ "$leader" -gt "$replicas" ]; then
    cat "$log"; echo "no replica was printed as leading the controllers" >&2; exit 1
  fi
  redis_port=$(sed -n 's|^replay store: redis://127\.0\.0\.1:\([0-9]*\)/0 .*|\1|p' "$log")
  echo "--- $replicas replicas answer on their own ports; replica $leader leads the controllers; redis-server on port ${redis_port:-?}"
fi

stop_demo
for _ in $(seq 1 60); do kill -0 "$demo" 2>/dev/null || break; sleep 1; done
if kill -0 "$demo" 2>/dev/null; then cat "$log"; echo "demo did not stop on SIGINT" >&2; exit 1; fi
# Ctrl-C is how the demo is meant to end: make must report success, not "Error 1".
status=0
wait "$demo" || status=$?
if [ "$status" -ne 0 ]; then cat "$log"; echo "make demo exited with status $status after SIGINT, want 0" >&2; exit 1; fi
if [ -f tmp/demo.env ]; then echo "demo left tmp/demo.env behind" >&2; exit 1; fi
if [ -n "$redis_port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null; then
  echo "demo left its redis-server running on port $redis_port" >&2; exit 1
fi
echo "--- demo stopped and cleaned up"
