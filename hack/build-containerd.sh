#!/usr/bin/env bash
# Builds containerd, ctr and containerd-shim-runc-v2 from Go modules (wrapper module hack/containerd/)
# and our own pause and apiprobe (hack/containerd/pause, apiprobe) into a versioned cache outside the
# repo, for the dev cluster's real node. Like hack/build-k8s.sh: rebuilds only on a miss, prints the cache directory.
# CGO off; the tags are those containerd's own Makefile uses where btrfs headers are absent
# (`no_btrfs`) and, for the shim, `no_grpc` (it speaks ttrpc only).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module="github.com/containerd/containerd/v2"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/containerd/go.mod")"
if [ -z "$version" ]; then
  echo "build-containerd: no $module requirement in $here/containerd/go.mod" >&2
  exit 1
fi
cache="${AIANALYSIS_CONTAINERD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/containerd-$version}"
mkdir -p "$cache"
ldflags="-s -w -X $module/version.Version=$version"
build() {  # name package tags
  local out="$cache/$1"
  if [ -x "$out" ]; then return 0; fi
  echo "building $1 ($2) into $cache" >&2
  local start=$SECONDS
  (cd "$here/containerd" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off -tags "$3" -ldflags "$ldflags" -o "$out.tmp" "$2")
  mv "$out.tmp" "$out"
  echo "built $1 in $((SECONDS - start))s" >&2
}
build containerd "$module/cmd/containerd" "urfave_cli_no_docs no_btrfs"
build ctr "$module/cmd/ctr" "urfave_cli_no_docs no_btrfs"
build containerd-shim-runc-v2 "$module/cmd/containerd-shim-runc-v2" "urfave_cli_no_docs no_btrfs no_grpc"
build pause ./pause ""
build apiprobe ./apiprobe ""  # the node tests' in-cluster client (in their busybox image)
echo "$cache"
