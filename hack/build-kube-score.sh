#!/usr/bin/env bash
# Builds kube-score from Go modules (wrapper module hack/kube-score/) into a versioned cache outside
# the repo, like hack/build-helm.sh. Rebuilds only on a miss. Prints the cache directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="github.com/zegl/kube-score"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/kube-score/go.mod")"
if [ -z "$version" ]; then
  echo "build-kube-score: no $module requirement in $here/kube-score/go.mod" >&2
  exit 1
fi
cache="${AIANALYSIS_KUBE_SCORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/kube-score-$version}"
out="$cache/kube-score"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building kube-score $version into $cache" >&2
  start=$SECONDS
  (cd "$here/kube-score" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off -ldflags "-s -w -X main.version=${version#v}" \
      -o "$out.tmp" "$module/cmd/kube-score")
  mv "$out.tmp" "$out"
  echo "built kube-score in $((SECONDS - start))s" >&2
fi
echo "$cache"
