#!/usr/bin/env bash
# Builds promtool (Prometheus) from Go modules (wrapper module hack/promtool/) into a versioned cache
# outside the repo, like hack/build-helm.sh. Rebuilds only on a miss. Prints the cache directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="github.com/prometheus/prometheus"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/promtool/go.mod")"
if [ -z "$version" ]; then
  echo "build-promtool: no $module requirement in $here/promtool/go.mod" >&2
  exit 1
fi
# Prometheus v3.N.P is published as Go module version v0.3NN.P.
minor="${version#v0.3}"; patch="${minor#*.}"; minor="${minor%%.*}"
release="3.$((10#$minor)).$patch"
cache="${AIANALYSIS_PROMTOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/promtool-v$release}"
out="$cache/promtool"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building promtool $release ($module $version) into $cache" >&2
  start=$SECONDS
  v="github.com/prometheus/common/version"
  # remove_all_sd: no service-discovery plugins (every cloud SDK); promtool only checks rules here.
  (cd "$here/promtool" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off -tags remove_all_sd \
      -ldflags "-s -w -X $v.Version=$release -X $v.Branch=release-3.$((10#$minor))" \
      -o "$out.tmp" "$module/cmd/promtool")
  mv "$out.tmp" "$out"
  echo "built promtool in $((SECONDS - start))s" >&2
fi
echo "$cache"
