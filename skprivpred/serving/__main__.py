"""``python -m skprivpred.serving MODEL [--ledger URL] [--host H] [--port P] [--workers N] ...``."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import socket
import sys
import threading

from ..accounting._ledger import open_ledger_url, redact, sqlite_path
from ._metrics import (
    MULTIPROCESS_ENVIRONMENT_VARIABLE,
    default_metrics_directory,
    prepare_metrics_directory,
    remove_metrics_directory,
)


class _ShowDefaults(argparse.HelpFormatter):
    """Help text that ends with the option's default, when it has one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        shown = default not in (None, False, [], argparse.SUPPRESS) and not isinstance(
            action, argparse._StoreTrueAction | argparse._StoreFalseAction
        )
        if shown and "%(default)" not in text and action.option_strings:
            text += " (default: %(default)s)"
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m skprivpred.serving",
        description="Serve the private predictions of a model written by save_model.",
        formatter_class=_ShowDefaults,
    )
    parser.add_argument("model", help="file written by skprivpred.serving.save_model")
    parser.add_argument(
        "--ledger",
        help="the model's budget under another address (a mounted file, a server URL); a "
        "URL holding a password is refused (every local user can read a command line): use "
        "a libpq passfile (PGPASSFILE, ~/.pgpass), PGPASSWORD, or --ledger-file",
    )
    parser.add_argument(
        "--ledger-file",
        metavar="FILE",
        help="a file holding the ledger's address on its first line (a server URL may hold "
        "its password there): owned by this user and readable by no one else (chmod 600)",
    )
    parser.add_argument(
        "--ledger-key-file",
        help="a file holding the key of the ledger journal's MAC (owned by this user, mode "
        "0600, kept outside the database); default: the path the model file names, if any",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--allowed-hosts",
        action="append",
        metavar="HOST[,HOST...]",
        help="the names a request's Host header may give, comma-separated or repeated "
        "('*.example.com' for every subdomain); any other Host gets 400 (against DNS "
        "rebinding); required with a --host other than loopback (default: the --host "
        "address and the loopback names)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes (all charge the one ledger)"
    )
    parser.add_argument(
        "--api-keys",
        help="file of 'client:key' lines, 'admin:name:key' for administrators (re-read when "
        "it changes); without it, the SKPRIVPRED_API_KEYS environment variable, else no keys",
    )
    parser.add_argument(
        "--quota-epsilon", type=float, help="each client's share of the budget (needs keys)"
    )
    parser.add_argument("--max-rows", type=int, default=1000, help="rows per request at most")
    parser.add_argument(
        "--max-body-bytes", type=int, default=1_000_000, help="largest request body, in bytes"
    )
    parser.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="MODULE.TYPE",
        help="a type the model file may hold besides scikit-learn's and skprivpred's (repeat "
        "for several); name only types you have reviewed",
    )
    parser.add_argument(
        "--unknown-categories",
        choices=["refuse", "encode-as-none"],
        default="refuse",
        help="what to do with a value outside a categorical column's public schema (its "
        "categories and its markers of a missing value): refuse it with 422 before anything "
        "is charged, or answer it encoded as none of the categories",
    )
    parser.add_argument(
        "--metrics-public",
        action="store_true",
        help="let /metrics show the global figures (budget, requests) without an API key",
    )
    parser.add_argument(
        "--metrics-dir",
        help="a directory dedicated to the workers' metric files (owned by this user, mode "
        "0700, created if absent, never the ledger's; default: a new one in the temporary "
        "directory)",
    )
    defence = parser.add_argument_group(
        "timing defence",
        "Every response leaves at the next point of a public schedule, each route on its "
        "own level (for /predict: quantum + the public cost of the model's path for the rows "
        "asked, doubled after an overrun, halved again after --timing-shrink-after responses "
        "on time; a response not ready at the last level's point is a fixed 503); the "
        "computation runs in a spawned process, so that a response's time tells nothing "
        "about the training rows beyond a few bits per change of the schedule.",
    )
    defence.add_argument(
        "--timing-quantum",
        type=float,
        default=0.004,
        metavar="SECONDS",
        help="the interval of any /predict request, before the public cost of its path",
    )
    defence.add_argument(
        "--timing-other-quantum",
        type=float,
        default=0.025,
        metavar="SECONDS",
        help="the interval of every route but /predict, whose responses leave on the "
        "multiples of it",
    )
    defence.add_argument(
        "--timing-per-row-teacher",
        type=float,
        default=None,
        metavar="SECONDS",
        help="added to the interval per row asked and per teacher of the model (default: "
        "predicted from the public cost of the model's path)",
    )
    defence.add_argument(
        "--timing-shrink-after",
        type=int,
        default=20,
        metavar="N",
        help="responses on time before a doubled interval is halved again",
    )
    defence.add_argument(
        "--no-timing-defence",
        dest="timing_defence",
        action="store_false",
        help="answer as soon as an answer is ready (a warning is logged: response times can "
        "then tell neighbouring training sets apart)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug", "trace"],
        help="uvicorn's and the service's log level",
    )
    parser.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="do not log a line per request (uvicorn's access log, written at the info level)",
    )
    args = parser.parse_args(argv)
    if args.workers < 1 or args.max_rows < 1 or args.max_body_bytes < 1:
        parser.error("--workers, --max-rows and --max-body-bytes must be at least 1")
    from ._app import LOOPBACK_HOSTS, _allowed_hosts, is_loopback

    if args.allowed_hosts is None:
        if not is_loopback(args.host):
            parser.error(
                f"--host {args.host} is not a loopback address: name the hosts that clients "
                "reach the service by with --allowed-hosts (a request with any other Host "
                "header is refused, so that a web page cannot reach it by DNS rebinding)"
            )
        bound = args.host.strip().lower()
        allowed = list(dict.fromkeys([bound, *LOOPBACK_HOSTS]))
    else:
        allowed = [h for value in args.allowed_hosts for h in value.split(",") if h.strip()]
    try:
        allowed = _allowed_hosts(allowed)
    except ValueError as exc:
        parser.error(str(exc))
    if args.ledger is not None and args.ledger_file is not None:
        parser.error("give the ledger by --ledger or by --ledger-file, not both")
    if args.ledger is not None:
        problem = password_in_address(args.ledger)
        if problem is not None:
            parser.error(problem)
    timing: dict | None = None
    if args.timing_defence:
        timing = {
            "quantum": args.timing_quantum,
            "other_quantum": args.timing_other_quantum,
            "per_row_teacher": args.timing_per_row_teacher,
            "shrink_after": args.timing_shrink_after,
        }
        from ._schedule import ReleaseSchedule

        try:
            ReleaseSchedule(**timing)
        except ValueError as exc:
            parser.error(str(exc))

    from ._model import budget_of, load_model

    model_path = os.path.abspath(args.model)
    if args.ledger_key_file:
        from ..accounting._accountant import LEDGER_KEY_FILE_VARIABLE

        # Read by every accountant loaded here and in the workers (they inherit it).
        os.environ[LEDGER_KEY_FILE_VARIABLE] = os.path.abspath(args.ledger_key_file)
    temporary_metrics = None
    try:
        # Loading the model does not import prometheus_client, which reads the metrics
        # directory when it is first imported (here, or in each worker, which inherits the
        # environment): the directory is set before anything imports it.
        model = load_model(model_path, trusted=args.trust or None)
        if args.ledger_file is not None:
            args.ledger = read_ledger_file(args.ledger_file)
        ledger_url = open_ledger_url(args.ledger) if args.ledger else budget_of(model).ledger_url
        requested = args.metrics_dir or os.environ.get(MULTIPROCESS_ENVIRONMENT_VARIABLE)
        if requested is None:
            requested = temporary_metrics = default_metrics_directory()
        os.environ[MULTIPROCESS_ENVIRONMENT_VARIABLE] = prepare_metrics_directory(
            requested, ledger_path=sqlite_path(ledger_url)
        )
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        print(f"skprivpred.serving: {_one_line(exc)}", file=sys.stderr)
        return 2

    from ._app import CONFIG_ENVIRONMENT_VARIABLE, create_app

    config = {
        "model": model_path,
        "ledger": args.ledger,
        "api_keys": None if args.api_keys is None else os.path.abspath(args.api_keys),
        "quota_epsilon": args.quota_epsilon,
        "max_rows": args.max_rows,
        "max_body_bytes": args.max_body_bytes,
        "trusted": args.trust,
        "metrics_public": args.metrics_public,
        "timing": timing,
        "unknown_categories": args.unknown_categories,
        # The workers find these settings in their environment, which (unlike the command
        # line) only this user can read: a password from --ledger-file stays private.
        "allowed_hosts": allowed,
    }
    # Check everything once here, so that a bad model, ledger or key file stops the
    # command with a clear message instead of failing in every worker.
    try:
        create_app(
            model,
            ledger=config["ledger"],
            api_keys=config["api_keys"],
            quota_epsilon=config["quota_epsilon"],
            max_rows=config["max_rows"],
            max_body_bytes=config["max_body_bytes"],
            metrics_public=config["metrics_public"],
            timing_defence=timing is not None,
            unknown_categories=args.unknown_categories,
            allowed_hosts=allowed,
        )
        budget = budget_of(model)
        budget.check_ledger()  # an edited ledger (or a missing key) stops the command here
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        print(f"skprivpred.serving: {_one_line(exc)}", file=sys.stderr)
        _remove(temporary_metrics)
        return 2

    # The model file names the budget it charges: say which, so an operator can check it.
    print(
        f"skprivpred.serving: charging the budget {budget.name!r} (epsilon={budget.epsilon:g}, "
        f"delta={budget.delta:g}) in the ledger {redact(budget.ledger_url)}",
        file=sys.stderr,
        flush=True,
    )
    os.environ[CONFIG_ENVIRONMENT_VARIABLE] = json.dumps(config)
    if threading.current_thread() is threading.main_thread():
        # SIGTERM stops the service as SIGINT (Ctrl-C) does: uvicorn shuts down gracefully,
        # then raises the signal again, which ends ``serve`` here instead of the process, so
        # the default metrics directory is removed below.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve(args.host, args.port, args.workers, args.log_level, access_log=args.access_log)
    finally:
        _remove(temporary_metrics)
    return 0


#: The ways libpq reads a password that keep it off the command line.
_PASSWORD_WAYS = (
    "a libpq password file (~/.pgpass, or the file that PGPASSFILE names, mode 0600), the "
    "PGPASSWORD environment variable, or --ledger-file FILE (a file of your own, mode 0600, "
    "holding the URL)"
)


def password_in_address(address: str) -> str | None:
    """Why ``address`` may not be given on the command line (it holds a password), or None.

    A password in a URL's user information (``postgresql://user:PW@host``)
    or in its ``password`` or ``sslpassword`` parameter (any case,
    percent-encoded or not) would be readable by every local user in
    ``/proc/PID/cmdline`` for as long as the service runs.
    """
    from urllib.parse import parse_qsl, unquote

    if "://" not in address:
        return None
    scheme, _, rest = address.partition("://")
    authority, _, after = rest.partition("/")
    authority, _, query_in_authority = authority.partition("?")
    query = after.partition("?")[2] if not query_in_authority else query_in_authority
    userinfo = authority.rpartition("@")[0] if "@" in authority else ""
    where = None
    if ":" in userinfo:
        where = "its user information (user:password@)"
    else:
        names = {unquote(name).strip().lower() for name, _ in parse_qsl(query, True)}
        found = sorted(names & {"password", "sslpassword"})
        if found:
            where = f"its {found[0]}= parameter"
    if where is None:
        return None
    return (
        f"--ledger holds a password, in {where}: every local user can read a command line "
        f"(/proc/PID/cmdline) for as long as the service runs, so it is refused. Give the "
        f"password by {_PASSWORD_WAYS}, and the URL without it."
    )


def read_ledger_file(path: str) -> str:
    """The ledger address on the first non-blank line of ``path``, a file only this user controls.

    Raises
    ------
    ValueError
        If another local user could read or change the file (it may hold a
        password), or it holds no address.
    """
    from ..utils._private_dirs import foreign_control

    with open(path, encoding="utf-8") as handle:
        problem = foreign_control(
            path, "the ledger file", info=os.fstat(handle.fileno()), secret=True, allow_link=True
        )
        if problem is not None:
            raise ValueError(
                f"--ledger-file: {problem}. It may hold the ledger's password: make it yours "
                "and readable by you only (chmod 600)."
            )
        lines = [line.strip() for line in handle.read().splitlines()]
    address = next((line for line in lines if line and not line.startswith("#")), None)
    if address is None:
        raise ValueError(f"--ledger-file: {path} holds no ledger address.")
    return address


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _remove(directory: str | None) -> None:
    if directory is not None:
        remove_metrics_directory(directory)


def serve(host: str, port: int, workers: int, log_level: str, *, access_log: bool = True) -> None:
    """Run uvicorn: one process, or a supervisor of ``workers`` processes on one socket.

    uvicorn parses HTTP with httptools and runs uvloop's event loop when they
    are installed (the ``serve`` extra installs both), else h11 and asyncio.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "skprivpred.serving._app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        access_log=access_log,
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
