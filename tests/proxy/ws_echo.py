#!/usr/bin/env python3
"""WebSocket echo server:  .venv/bin/python tests/proxy/ws_echo.py PORT

Path /ws (anything else: 404).  Each message, text or binary, comes back
whole, with its type, in one frame (the library reassembles fragmented
messages).  Messages up to 64 MiB.  Permessage-deflate only when the
client offers it (ws_client.py does not unless told --deflate).
"""
import asyncio
import signal
import sys
from urllib.parse import urlsplit

from websockets.asyncio.server import serve

MAX_SIZE = 64 << 20


async def echo(ws):
    async for message in ws:
        await ws.send(message)


def only_ws(connection, request):
    if urlsplit(request.path).path != "/ws":
        return connection.respond(404, "not found\n")
    return None


async def main(port):
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)
    async with serve(echo, "127.0.0.1", port, process_request=only_ws,
                     max_size=MAX_SIZE, max_queue=None, close_timeout=2):
        await stop


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ws_echo.py PORT")
    asyncio.run(main(int(sys.argv[1])))
