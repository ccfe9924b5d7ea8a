"""``python -m skprivpred.serving MODEL [--ledger URL] [--host H] [--port P] [--workers N]``."""

from __future__ import annotations

import argparse
import json
import os
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

    import uvicorn

    os.environ[CONFIG_ENVIRONMENT_VARIABLE] = json.dumps(config)
    uvicorn.run(
        "skprivpred.serving._app:app_from_environment",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
