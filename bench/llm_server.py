"""The scripted Messages API as its own process, so its CPU never competes for the benchmark
process's GIL (the watch that timestamps terminal statuses runs there).

    python -m bench.llm_server --delay 2.0 [--dump-first PATH]

Prints the base URL on the first line of stdout, serves until stdin closes, then prints one JSON
line of statistics (requests, most requests in flight at once, unexpected requests).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.support import messages_server as ms

from bench import workload


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--dump-first", type=Path, help="write the first request's body here (JSON)")
    args = parser.parse_args(argv)
    policy = workload.Policy(delay=args.delay)
    with ms.MessagesServer(policy=policy) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()
        requests = server.requests
        stats = {
            "requests": len(requests),
            "max_in_flight": server.max_in_flight,
            "unexpected": policy.unexpected,
        }
    if args.dump_first and requests:
        args.dump_first.write_text(json.dumps(requests[0].body))
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
