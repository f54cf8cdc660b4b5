#!/usr/bin/env bash
# Builds Alertmanager from Go modules (wrapper module hack/alertmanager/) into a versioned cache
# outside the repo, like hack/build-k8s.sh. Rebuilds only on a miss. Prints the cache directory.
# Only the intake's end-to-end test runs it, on loopback ports.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="github.com/prometheus/alertmanager"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/alertmanager/go.mod")"
if [ -z "$version" ]; then
  echo "build-alertmanager: no $module requirement in $here/alertmanager/go.mod" >&2
  exit 1
fi
cache="${AIANALYSIS_ALERTMANAGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/alertmanager-$version}"
out="$cache/alertmanager"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building alertmanager $version into $cache" >&2
  start=$SECONDS
  v="github.com/prometheus/common/version"
  (cd "$here/alertmanager" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off \
      -ldflags "-s -w -X $v.Version=${version#v} -X $v.Branch=release -X $v.Revision=module" \
      -o "$out.tmp" "$module/cmd/alertmanager")
  mv "$out.tmp" "$out"
  echo "built alertmanager in $((SECONDS - start))s" >&2
fi
echo "$cache"
