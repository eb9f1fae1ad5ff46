#!/usr/bin/env bash
# Writes charts/ltiop/README.md from the chart's values.schema.json and values.yaml
# (hack/chartreadme; its test fails when the README is not current).
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./hack/chartreadme charts/ltiop
