"""``python -m skprivpred.serving MODEL [--ledger URL] [--host H] [--port P] [--workers N]``."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import socket
import sys

from ._app import CONFIG_ENVIRONMENT_VARIABLE, create_app
from ._model import load_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m skprivpred.serving",
        description="Serve the private predictions of a model written by save_model.",
    )
    parser.add_argument("model", help="file written by skprivpred.serving.save_model")
    parser.add_argument(
        "--ledger",
        help="the model's budget under another address (a mounted file, a server URL)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument(
        "--api-keys",
        help="file of 'client:key' lines (re-read when it changes); without it, "
        "the SKPRIVPRED_API_KEYS environment variable, else no keys",
    )
    parser.add_argument(
        "--quota-epsilon", type=float, help="each client's share of the budget (needs keys)"
    )
    parser.add_argument("--max-rows", type=int, default=1000, help="rows per request at most")
    parser.add_argument("--max-body-bytes", type=int, default=1_000_000)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    if args.workers < 1 or args.max_rows < 1 or args.max_body_bytes < 1:
        parser.error("--workers, --max-rows and --max-body-bytes must be at least 1")

    config = {
        "model": os.path.abspath(args.model),
        "ledger": args.ledger,
        "api_keys": None if args.api_keys is None else os.path.abspath(args.api_keys),
        "quota_epsilon": args.quota_epsilon,
        "max_rows": args.max_rows,
        "max_body_bytes": args.max_body_bytes,
    }
    # Check everything once here, so that a bad model, ledger or key file stops the
    # command with a clear message instead of failing in every worker.
    try:
        create_app(
            load_model(config["model"]),
            ledger=config["ledger"],
            api_keys=config["api_keys"],
            quota_epsilon=config["quota_epsilon"],
            max_rows=config["max_rows"],
            max_body_bytes=config["max_body_bytes"],
        )
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"skprivpred.serving: {exc}", file=sys.stderr)
        return 2

    os.environ[CONFIG_ENVIRONMENT_VARIABLE] = json.dumps(config)
    serve(args.host, args.port, args.workers, args.log_level)
    return 0


def serve(host: str, port: int, workers: int, log_level: str) -> None:
    """Run uvicorn: one process, or a supervisor of ``workers`` processes on one socket."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "skprivpred.serving._app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
    )
    server = uvicorn.Server(config)
    try:
        if workers == 1:
            server.run()
            return
        sock = config.bind_socket()
        # Answers go out at once: without TCP_NODELAY (which uvicorn's shared socket does
        # not get, and accepted connections inherit on Linux) small responses wait for
        # delayed ACKs.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        older = "target" in inspect.signature(Multiprocess).parameters  # older uvicorn
        Multiprocess(config, sockets=[sock], **({"target": server.run} if older else {})).run()
    except KeyboardInterrupt:  # Ctrl-C (or SIGINT) stops the service quietly
        pass


if __name__ == "__main__":
    raise SystemExit(main())
