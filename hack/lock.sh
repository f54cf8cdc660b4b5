#!/usr/bin/env bash
# The Python dependency lock: hashed requirement files in requirements/, resolved by uv from
# pyproject.toml (and only from it). `make lock` runs this; `make lock UPGRADE=1` moves every pin to
# the newest version pyproject.toml allows (otherwise existing pins are kept and only what changed
# in pyproject.toml is resolved). `hack/lock.sh --check` (in `make test`) fails when a file is out of
# date with pyproject.toml.
#   requirements/dev.txt          everything `make venv` installs: runtime + eval extra + dev group
#   requirements/operator.txt     the runtime dependencies alone, at the same versions (the image)
#   requirements/image-build.txt  the build backend the Dockerfile builds the operator wheel with
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uv="$("$root/hack/install-uv.sh")/bin/uv"
cd "$root"
check=0 upgrade=()
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    --upgrade) upgrade=(--upgrade) ;;
    *) echo "usage: hack/lock.sh [--check|--upgrade]" >&2; exit 2 ;;
  esac
done
if [ "$check" = 1 ]; then
  # Resolve again in a scratch copy (existing pins are kept) and compare.
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  cp -r pyproject.toml README.md requirements "$scratch/"
  cd "$scratch"
fi
compile() {  # output-file uv-pip-compile-arguments...
  local file="$1"; shift
  "$uv" pip compile --quiet --universal --python-version 3.11 --generate-hashes \
    --custom-compile-command "make lock" ${upgrade[@]+"${upgrade[@]}"} -o "requirements/$file" "$@"
}
compile dev.txt pyproject.toml --extra eval --group dev
compile operator.txt pyproject.toml --constraint requirements/dev.txt
compile image-build.txt --group pyproject.toml:image-build
if [ "$check" = 1 ]; then
  if ! diff -ru "$root/requirements" requirements >&2; then
    echo "requirements/ is out of date with pyproject.toml: run \`make lock\` and commit the result" >&2
    exit 1
  fi
  echo "requirements/ matches pyproject.toml"
fi
