"""``sealbench session …``: the human-session commands of the CLI (docs/humans.md).

    sealbench session start TASK --role human --who NAME [--no-shell]   start the clock; from a
                                        terminal, open the sealed shell at once
    sealbench session shell [-c COMMAND]   the sealed shell (session_shell.py)
    sealbench session check | steer "TEXT" | status | submit

Inside the sealed shell (``$SEALBENCH_SESSION_SOCKET`` set) ``sealbench session …`` is sent to
the shell's session outside the sandbox (:func:`forwarded`). The functions of the same names
in :mod:`sealbench.agent.session` are the API.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def cmd_start(args: argparse.Namespace) -> int:
    from ..agent import session

    s = session.start_session(args.task, args.who, args.role, args.config, args.results)
    print(session.describe_start(s))
    if args.no_shell or not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("work in the sealed shell: `sealbench session shell` (the pack and results/ are not there)")
        return 0
    print("opening the sealed shell (`exit` leaves it, the clock goes on; `sealbench session shell` comes back)")
    sys.stdout.flush()
    try:
        return _shell(args.results, s.id, None)
    except session.SessionError as exc:
        print(f"sealbench: {exc}", file=sys.stderr)
        return 0


def _shell(results: Path, session_id: str | None, command: str | None) -> int:
    from ..agent.session_shell import open_shell

    return open_shell(results, session_id, command)


def cmd_shell(args: argparse.Namespace) -> int:
    return _shell(args.results, args.session, args.command)


def cmd_check(args: argparse.Namespace) -> int:
    from ..agent import session

    rc, attempt = session.check(args.session, args.results)
    s = session.resolve(args.results, args.session)
    verdict = "GREEN" if rc == 0 else f"failing (exit {rc})"
    print(f"\nvisible tests: {verdict} — attempt {len(session.read_jsonl(s.attempts_path))} "
          f"at {session.fmt_s(attempt['end_s'])}; {session.clock_line(s)}")
    return rc


def cmd_steer(args: argparse.Namespace) -> int:
    from ..agent import session

    line = session.steer(args.text, args.session, args.results)
    print(f"steer recorded at {session.fmt_s(line['t_s'])}")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from ..agent import session

    print(session.describe_submit(session.submit(args.session, args.results)))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from ..agent import session

    print(session.describe_status(session.status(args.session, args.results)))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("session", help="a human session: the agent's workspace, visible command, clock and sandbox")
    ssub = sp.add_subparsers(dest="session_cmd", required=True)
    p = ssub.add_parser("start", help="build the workspace and start the clock (from a terminal: the sealed shell)")
    p.add_argument("task")
    p.add_argument("--role", required=True, help="who works the task: only 'human'")
    p.add_argument("--who", required=True, help="the person's name: ^[A-Za-z][A-Za-z0-9_]*$")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    p.add_argument("--results", type=Path, default=Path("results"))
    p.add_argument("--no-shell", action="store_true", help="only start (the sealed shell: `sealbench session shell`)")
    p.set_defaults(func=cmd_start)
    for name, func, helptext in (("check", cmd_check, "run the visible tests and record the attempt"),
                                 ("steer", cmd_steer, "record help the person received"),
                                 ("submit", cmd_submit, "stop the clock and write the run record"),
                                 ("status", cmd_status, "the session, its clock and attempts"),
                                 ("shell", cmd_shell, "the sealed shell: the workspace in the agents' sandbox")):
        p = ssub.add_parser(name, help=helptext)
        if name == "steer":
            p.add_argument("text")
        if name == "shell":
            p.add_argument("-c", dest="command", default=None, help="run this command in the shell and exit")
        p.add_argument("--session", default=None, help="session id (default: the one in RESULTS/sessions/current)")
        p.add_argument("--results", type=Path, default=Path("results"))
        p.set_defaults(func=func)


def forwarded(argv: list[str]) -> int | None:
    """Inside the sealed shell: ``sealbench session …`` answered by the shell's session (an exit
    code); None outside it."""
    from ..agent.session_shell import SOCKET_ENV, client

    sock = os.environ.get(SOCKET_ENV)
    if not sock or argv[:1] != ["session"]:
        return None
    return client(sock, argv)
