"""``python -m aianalysis_dev.images`` (``make image``, ``hack/build-image.sh``): build or reuse images.

operator [--json]   the operator image: its tar's path (with --json: name, digest, pinned, size, path)
workflows           the example workflows' images: a JSON map workflowId → the same record
catalog DIR         examples/catalog/*.yaml written to DIR with those images pinned by digest
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aianalysis_dev import images


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aianalysis_dev.images", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    commands = parser.add_subparsers(dest="command", required=True)
    operator = commands.add_parser("operator", help="the operator image")
    operator.add_argument("--json", action="store_true", help="print the whole record")
    commands.add_parser("workflows", help="the example workflows' images")
    catalog = commands.add_parser("catalog", help="the example catalog pinned to the workflow images")
    catalog.add_argument("dest", help="directory to write the catalog files to")
    args = parser.parse_args(argv)
    try:
        if args.command == "operator":
            built = images.operator_image()
            print(json.dumps(built.as_json(), indent=2) if args.json else built.path)
        elif args.command == "workflows":
            print(json.dumps({k: v.as_json() for k, v in images.workflow_images().items()}, indent=2))
        else:
            written = images.pinned_catalog(
                images.REPO_ROOT / "examples" / "catalog", Path(args.dest), images.workflow_images()
            )
            print(*written, sep="\n")
    except images.ImageBuildError as error:
        print(f"images: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
