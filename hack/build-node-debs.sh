#!/usr/bin/env bash
# The parts of the dev cluster's real node that the distribution packages (AIANALYSIS_NODE_DEBS):
# runc, the CNI plugins, a static busybox for test images, and nft for kube-proxy's nftables mode
# with the libraries it needs. Downloaded and unpacked (not installed: nothing on the host changes),
# like hack/build-prometheus.sh, into a cache outside the repo named after the package list.
# Reuses the cache on a hit; prints the cache directory: bin/ (runc, nft, busybox), cni/ (plugins),
# VERSIONS (what was unpacked).
set -euo pipefail
packages=(runc containernetworking-plugins busybox-static
          nftables libnftables1 libnftnl11 libmnl0 libjansson4 libxtables12 libedit2 libbsd0 libmd0)
root="${XDG_CACHE_HOME:-$HOME/.cache}/aianalysis-operator"
key="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-8)"
cache="${AIANALYSIS_NODE_DEBS_CACHE:-$root/node-debs-$key}"
if [ -e "$cache/VERSIONS" ]; then
  echo "$cache"
  exit 0
fi
start=$SECONDS
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"  # apt's download sandbox user must be able to write there
if ! (cd "$work" && apt-get download -qq "${packages[@]}" >/dev/null 2>&1); then
  apt-get update -qq >/dev/null  # a fresh machine may have no package lists yet
  (cd "$work" && apt-get download -qq "${packages[@]}" >/dev/null)
fi
for deb in "$work"/*.deb; do
  dpkg-deb -x "$deb" "$work/root"
  dpkg-deb -f "$deb" Package Version | awk '{print $2}' | paste -sd= >>"$work/VERSIONS"
done
tree="$cache.tmp"
rm -rf "$tree"
mkdir -p "$tree/bin" "$tree/lib"
cp -a "$work/root/usr/lib/cni" "$tree/cni"
cp "$work/root/usr/sbin/runc" "$work/root/bin/busybox" "$tree/bin/"
cp "$work/root/usr/sbin/nft" "$tree/lib/nft"
cp -a "$work"/root/usr/lib/x86_64-linux-gnu/*.so* "$work"/root/lib/x86_64-linux-gnu/*.so* "$tree/lib/" 2>/dev/null || true
# nft finds its libraries beside it; kube-proxy runs `nft` from PATH.
cat >"$tree/bin/nft" <<'NFT'
#!/bin/sh
here="$(dirname "$(readlink -f "$0")")/../lib"
LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/nft" "$@"
NFT
chmod +x "$tree/bin/nft"
missing="$(LD_LIBRARY_PATH="$tree/lib" ldd "$tree/lib/nft" "$tree/bin/runc" | grep 'not found' || true)"
if [ -n "$missing" ]; then
  echo "build-node-debs: libraries missing on this host: $missing" >&2
  exit 1
fi
"$tree/bin/nft" --version >/dev/null
"$tree/bin/runc" --version >/dev/null
sort "$work/VERSIONS" >"$tree/VERSIONS"
rm -rf "$cache"
mv "$tree" "$cache"
echo "unpacked ${#packages[@]} packages into $cache in $((SECONDS - start))s" >&2
echo "$cache"
