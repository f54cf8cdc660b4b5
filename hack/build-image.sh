#!/usr/bin/env bash
# The operator's image and the example workflows' images as OCI image-layout tars, without Docker or
# a registry (devtools/aianalysis_dev/images): built from the Dockerfile's own instructions, cached
# under ~/.cache/aianalysis-operator/images/ by a hash of their inputs, rebuilt only when one changes.
# Needs root (debootstrap, chroot, mount namespaces) and the dev virtualenv (`make venv`).
#   hack/build-image.sh                   the operator image: prints its tar's path
#   hack/build-image.sh operator --json   name, digest, pinned reference, size, path
#   hack/build-image.sh workflows         a JSON map workflowId -> the same record
#   hack/build-image.sh catalog DIR       examples/catalog pinned to the workflow images, in DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="$here/../.venv/bin/python"
if [ ! -x "$python" ]; then
  echo "build-image: no virtualenv at .venv; run \`make venv\` first" >&2
  exit 1
fi
[ $# -gt 0 ] || set -- operator
exec nice -n 10 "$python" -m aianalysis_dev.images "$@"
