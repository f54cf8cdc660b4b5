#!/usr/bin/env bash
# Debian's chromium for the console's browser tests (tests/browser/), driven by Playwright for Python
# with executable_path=/usr/bin/chromium: Playwright's own browser builds are not downloaded. Installs
# it with apt only when it is missing (as root, or through sudo); prints the binary's path.
set -euo pipefail
bin=/usr/bin/chromium
if [ ! -x "$bin" ]; then
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
fi
echo "$bin"
