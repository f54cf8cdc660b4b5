#!/usr/bin/env bash
# Builds the helm CLI from Go modules (wrapper module hack/helm/) into a versioned cache outside the
# repo, like hack/build-k8s.sh. Rebuilds only on a miss. Prints the cache directory on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="helm.sh/helm/v4"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/helm/go.mod")"
if [ -z "$version" ]; then
  echo "build-helm: no $module requirement in $here/helm/go.mod" >&2
  exit 1
fi
cache="${AIANALYSIS_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/helm-$version}"
out="$cache/helm"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building helm $version into $cache" >&2
  start=$SECONDS
  v="$module/internal/version"
  (cd "$here/helm" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off \
      -ldflags "-s -w -X $v.version=$version -X $v.gitTreeState=clean" \
      -o "$out.tmp" "$module/cmd/helm")
  mv "$out.tmp" "$out"
  echo "built helm in $((SECONDS - start))s" >&2
fi
echo "$cache"
