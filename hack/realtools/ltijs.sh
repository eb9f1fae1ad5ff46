#!/usr/bin/env bash
# hack/realtools/ltijs.sh: runs ltijs, a real third-party LTI 1.3 tool (npm, pinned by
# package-lock.json), against ltiop's platform mode: dynamic registration, a launch ltijs
# validates, the roster through ltiop's NRPS and grades through its AGS, answered by the
# integrator's data API (simulators/datasim). It is the spec of test/e2e/ltijs_test.go,
# run alone with ltijs's report printed; it fails, rather than skips, when node, npm or
# PostgreSQL are missing (Debian: apt-get install nodejs npm postgresql).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
assets=$(hack/build-binaries.sh)
LTIOP_REQUIRE_LTIJS=1 KUBEBUILDER_ASSETS="$assets" go test -v -count=1 ./test/e2e -run TestWebServer \
  -ginkgo.focus ltijs -ginkgo.v -ginkgo.no-color "$@"
