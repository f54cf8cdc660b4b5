#!/usr/bin/env bash
# Installs uv, the tool that locks (uv.lock) and installs this project's Python dependencies, from its
# wheel on the package index into a versioned cache outside the repo, like hack/build-helm.sh: the
# version and the hash of every published file are pinned in hack/uv/requirements.txt, so pip
# refuses anything else. Reinstalls only on a miss. Prints the cache directory (uv is in bin/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pins="$here/uv/requirements.txt"
version="$(sed -n 's/^uv==\([^ ]*\).*/\1/p' "$pins")"
if [ -z "$version" ]; then
  echo "install-uv: no uv==VERSION line in $pins" >&2
  exit 1
fi
cache="${AIANALYSIS_UV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator/uv-$version}"
if [ ! -x "$cache/bin/uv" ]; then
  echo "installing uv $version into $cache" >&2
  rm -rf "$cache.tmp"
  "${PYTHON:-python3}" -m pip install --quiet --disable-pip-version-check --no-cache-dir --root-user-action=ignore \
    --require-hashes --no-deps --only-binary=:all: --target "$cache.tmp" -r "$pins"
  rm -rf "$cache"
  mv "$cache.tmp" "$cache"
fi
echo "$cache"
