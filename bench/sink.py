"""A bare aiohttp endpoint that reads and parses a JSON body and answers 200: the floor the intake's
answer latency is compared with, measured side by side on the same machine in the same run.

    python -m bench.sink      # prints its URL, serves until stdin closes
"""

from __future__ import annotations

import asyncio
import json
import sys

from aiohttp import web


async def _receive(request: web.Request) -> web.Response:
    body = json.loads(await request.read())
    return web.json_response({"accepted": len(body.get("alerts", []))})


async def _main() -> None:
    app = web.Application(client_max_size=1024 * 1024)
    app.router.add_post("/api/v1/alertmanager", _receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    print(f"http://127.0.0.1:{port}/api/v1/alertmanager", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(_main())
