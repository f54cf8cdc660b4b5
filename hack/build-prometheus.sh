#!/usr/bin/env bash
# A real Prometheus server for the tests (AIANALYSIS_PROMETHEUS_BIN): Debian's `prometheus` package,
# downloaded and unpacked (not installed: no root-owned files, no service started) into a versioned
# cache outside the repo, like the other hack/build-*.sh. Reuses the cache on a hit; prints the
# cache directory (it holds `prometheus`).
#
# Why the package and not a Go build (measured on 2 shared cores, 2026-11-24): the package (2.42) is
# one 19 MB download, ready in 3.3 s cold; building cmd/prometheus (3.14) from Go modules (the
# wrapper module hack/promtool/ requires it; its go.sum holds the extra sums) took 431 s at load 10,
# and serves the HTTP API (every Prometheus tool test passes on both) but not the web UI (no
# assets: 500). The Go build is the fallback where apt is not available
# (AIANALYSIS_PROMETHEUS_FROM=go forces it).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator"
from="${AIANALYSIS_PROMETHEUS_FROM:-}"
if [ -z "$from" ]; then
  if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then from=deb; else from=go; fi
fi

if [ "$from" = deb ]; then
  cache="${AIANALYSIS_PROMETHEUS_CACHE:-$root/prometheus-deb}"
  if [ ! -x "$cache/prometheus" ]; then
    start=$SECONDS
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    chmod 755 "$work"  # apt's download sandbox user must be able to write there
    if ! (cd "$work" && apt-get download -qq prometheus >/dev/null 2>&1); then
      # A fresh machine may have no package lists yet.
      apt-get update -qq >/dev/null
      (cd "$work" && apt-get download -qq prometheus >/dev/null)
    fi
    dpkg-deb -x "$work"/prometheus_*.deb "$work/x"
    mkdir -p "$cache"
    cp "$work/x/usr/bin/prometheus" "$cache/prometheus.tmp"
    mv "$cache/prometheus.tmp" "$cache/prometheus"
    "$cache/prometheus" --version 2>&1 | head -1 >"$cache/VERSION"
    echo "unpacked $(cat "$cache/VERSION") into $cache in $((SECONDS - start))s" >&2
  fi
  echo "$cache"
  exit 0
fi

# From Go modules: the Prometheus module the promtool wrapper already requires (same version).
module="github.com/prometheus/prometheus"
version="$(awk -v m="$module" '$1==m{print $2; exit} $2==m{print $3; exit}' "$here/promtool/go.mod")"
minor="${version#v0.3}"; patch="${minor#*.}"; minor="${minor%%.*}"
release="3.$((10#$minor)).$patch"
cache="${AIANALYSIS_PROMETHEUS_CACHE:-$root/prometheus-v$release}"
if [ ! -x "$cache/prometheus" ]; then
  mkdir -p "$cache"
  echo "building prometheus $release ($module $version) into $cache" >&2
  start=$SECONDS
  v="github.com/prometheus/common/version"
  (cd "$here/promtool" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go build -trimpath -pgo=off -tags remove_all_sd \
      -ldflags "-s -w -X $v.Version=$release -X $v.Branch=release-3.$((10#$minor))" \
      -o "$cache/prometheus.tmp" "$module/cmd/prometheus")
  mv "$cache/prometheus.tmp" "$cache/prometheus"
  echo "built prometheus in $((SECONDS - start))s" >&2
fi
echo "$cache"
