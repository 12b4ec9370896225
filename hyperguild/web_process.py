"""One web process: uvicorn on a listening socket of its own that shares the port (SO_REUSEPORT).

`manage.py serve` starts HYPERGUILD_WEB_WORKERS of these. With a socket per process the
kernel spreads new connections over the processes by a hash of each connection's
addresses. With uvicorn's own `--workers`, every process accepts from one shared socket,
and a burst of keep-alive connections (an MCP client's pool, a load test) lands mostly
on whichever process happened to be awake: `bench_load` showed one process holding twice
the connections of the other in about half its runs.

The kernel's hash can still give one process more of the connections than another;
with `--board` the processes keep their shares even (`hyperguild/lib/balance.py`).

Linux lets only processes of the same user join a port this way; `serve` refuses a port
another program already listens on before it starts any of these.

    python -m hyperguild.web_process --host 127.0.0.1 --port 8000 [--board FILE --slot I --slots N]
"""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import uvicorn

from hyperguild.lib import balance
from hyperguild.lib.processes import limit_heap_arenas

BACKLOG = 2048


def custom_application():
    """hyperguild's own ASGI handler (hyperguild/asgi_handler.py) over the same settings as `hyperguild.asgi`."""
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    import hyperguild.asgi  # noqa: F401 - settings, the pool default, django.setup()
    from hyperguild.asgi_handler import SyncChainASGIHandler

    return ASGIStaticFilesHandler(SyncChainASGIHandler())


def shared_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port) that other processes of this user may listen on too."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    return sock


def port_taken(host: str, port: int) -> bool:
    """True if something already listens on (host, port) — another program, or another serve."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))  # without SO_REUSEPORT: fails while anyone listens there
        except OSError:
            return True
    return False


class Server(uvicorn.Server):
    """uvicorn's server, writing its number of connections to the board ten times a second."""

    board: balance.Board | None = None

    async def on_tick(self, counter: int) -> bool:
        balancer = balance.installed()
        if balancer is not None:
            balancer.publish()
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.board is not None:
            balance.install(None)
            self.board.publish(0)  # the others stop counting this process's connections
        await super().shutdown(sockets)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one hyperguild web process (started by manage.py serve)")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--board", type=Path, help="file the web processes of one port share to even out connections")
    parser.add_argument("--slot", type=int, default=0, help="this process's slot on the board (0 to --slots - 1)")
    parser.add_argument("--slots", type=int, default=1, help="web processes sharing the board")
    args = parser.parse_args(argv)
    if args.board is not None and not 0 <= args.slot < args.slots:
        parser.error(f"--slot must be between 0 and {args.slots - 1}")
    limit_heap_arenas()  # before any request thread starts (see its docstring)
    sock = shared_socket(args.host, args.port)
    config = uvicorn.Config(custom_application(), timeout_graceful_shutdown=5, access_log=False, lifespan="off")
    server = Server(config)
    if args.board is not None and args.slots > 1:
        server.board = balance.Board(args.board, args.slots, args.slot)
        balance.install(balance.Balancer(server.board, lambda: len(server.server_state.connections)))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
