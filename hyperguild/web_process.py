"""One web process: uvicorn on a listening socket of its own that shares the port (SO_REUSEPORT).

`manage.py serve` starts HYPERGUILD_WEB_WORKERS of these. With a socket per process the
kernel spreads new connections over the processes by a hash of each connection's
addresses. With uvicorn's own `--workers`, every process accepts from one shared socket,
and a burst of keep-alive connections (an MCP client's pool, a load test) lands mostly
on whichever process happened to be awake: `bench_load` showed one process holding twice
the connections of the other in about half its runs.

Linux lets only processes of the same user join a port this way; `serve` refuses a port
another program already listens on before it starts any of these.

    python -m hyperguild.web_process --host 127.0.0.1 --port 8000
"""

from __future__ import annotations

import argparse
import socket

import uvicorn

APPLICATION = "hyperguild.asgi:application"
BACKLOG = 2048


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one hyperguild web process (started by manage.py serve)")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    sock = shared_socket(args.host, args.port)
    config = uvicorn.Config(APPLICATION, timeout_graceful_shutdown=5, access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
