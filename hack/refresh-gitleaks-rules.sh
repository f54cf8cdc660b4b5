#!/usr/bin/env bash
# Refresh the vendored gitleaks rule set (operator/aianalysis/analysis/redact/gitleaks.toml) from a
# checkout of gitleaks/gitleaks. The file is copied verbatim — never edit it by hand: gitleaks
# generates it (cmd/generate/config) and tests/unit/test_redact.py checks its digest against
# gitleaks.source, which this script writes. The license travels with it.
#
#   hack/refresh-gitleaks-rules.sh /path/to/gitleaks          # a git checkout (any commit)
#   pytest tests/unit/test_redact.py                          # every shape still caught, FP rate
set -euo pipefail
src=${1:?usage: $0 PATH-TO-A-GITLEAKS-CHECKOUT}
dest=$(cd "$(dirname "$0")/../operator/aianalysis/analysis/redact" && pwd)
commit=$(git -C "$src" rev-parse HEAD)
git -C "$src" show HEAD:config/gitleaks.toml > "$dest/gitleaks.toml"
git -C "$src" show HEAD:LICENSE > "$dest/GITLEAKS-LICENSE"
digest=$(sha256sum "$dest/gitleaks.toml" | cut -d' ' -f1)
cat > "$dest/gitleaks.source" <<SOURCE
repository = gitleaks/gitleaks
path = config/gitleaks.toml
commit = $commit
sha256 = $digest
license = MIT (GITLEAKS-LICENSE)
SOURCE
echo "gitleaks rules at $commit ($digest)"
