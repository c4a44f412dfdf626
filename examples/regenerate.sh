#!/usr/bin/env bash
# Re-tune every example suite on the 910B3 profile and re-emit its project tree.
# CI runs the emit step with --check against the committed results (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"
for dir in */; do
  op=${dir%/}
  shapes=$(ls "$op"/shapes.* | head -n 1)
  rm -f "$op/results.json"
  ascend-tune search "$op" --hw ascend910b3 --shapes "$shapes" -o "$op/results.json" --quiet >/dev/null
  tree=$(python3 -c "import json,sys; print(json.load(open('$op/results.json'))['spec']['name'])")
  ascend-tune emit "$op/results.json" -o "$op/$tree" --op-host --quiet
done
