"""The launcher of every pipeline job: ``python -m sealbench.isolation.job_launch RUN_PID MODULE ARGS...``
runs ``python -m MODULE ARGS`` and makes sure that nothing of the job outlives the run that
started it (``sealbench_job``, defined by :func:`shell_prefix`, the prefix of every job's shell
in workflow/rules/common.smk; RUN_PID is that Snakemake process).

A job's commands do not end with it by themselves: an agent's command, a test run, a batch's
worker processes each run in a session of their own (:func:`sealbench.core.processes.run_process`),
so neither a terminal's Ctrl-C (sent to the run's process group) nor the end of the run reaches
them. The launcher therefore

* runs the stage module as its child (forked: ``python -m MODULE`` without a second interpreter
  start), in a process group of its own (a Ctrl-C reaches the launcher, not the stage: no
  traceback of an interrupted stage in the job's log), which dies with the launcher
  (``PR_SET_PDEATHSIG``);
* adopts every orphan of the job (``PR_SET_CHILD_SUBREAPER``), so the whole tree stays its
  descendants;
* watches RUN_PID (a pidfd: woken the moment it ends, also on ``kill -9``) and the child: when
  the run ends first, or when the launcher gets SIGINT, SIGTERM or SIGHUP, it kills every
  descendant, writes one line (:data:`STOPPED`) to the job's log and ends (on a signal, by that
  signal, so the job's shell stops as well).

What the job wrote stays as a killed job leaves it: Snakemake marks its outputs incomplete and
the next run redoes the job (every output is content-addressed and written whole).
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import sys
from collections.abc import Callable, Mapping

from ..core.processes import become_subreaper, kill_descendants

#: The start of the line a stopped job's log ends with (the console's logger plugin reads it:
#: a job stopped so is not a failure to show).
STOPPED = "sealbench: job stopped: "
#: The signals that stop a job (and its launcher) as a whole.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: prctl options (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get SIGKILL when the launcher ends (Linux; elsewhere
    nothing)."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda: None

    def set_pdeathsig() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    return set_pdeathsig


def _say(text: str) -> None:
    try:
        sys.stderr.write(STOPPED + text + "\n")
        sys.stderr.flush()
    except OSError:  # the log could not be written (a full disk): the job is stopped all the same
        pass


def _stop_on(signum: int, frame: object) -> None:
    """SIGINT, SIGTERM, SIGHUP: end the job's whole tree, then the launcher by the same signal."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)  # one stop at a time: a second Ctrl-C changes nothing
    kill_descendants()
    _say(f"interrupted ({signal.Signals(signum).name}); the job reruns on the next run")
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except (AttributeError, OSError):  # no pidfd (an old kernel): the run is not watched
        return None


def _exit_status(rc: int) -> int:
    """The child's exit status as a shell reports it (killed by signal n: 128 + n)."""
    return rc if rc >= 0 else 128 - rc


def _wait(pid: int) -> int:
    """The child's return code as :class:`subprocess.Popen` gives it (killed by signal n: -n;
    0 when it was reaped already, as ``kill_descendants`` reaps what it kills: Popen's answer too)."""
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def _become_stage(module: str, args: list[str]) -> None:
    """In the forked child: become ``python -m module args`` — a process group of its own, stdin
    not the terminal's (the child is not in its foreground group: no stage reads it), killed when
    the launcher ends, the interpreter's own signal handling — then run the module as
    ``__main__``. A fork, not a new interpreter: the job does not start Python and import the
    launcher's modules twice (about 0.1 s of every job). It ends as the module ends: its exit
    status, an uncaught exception's traceback, atexit handlers and threads joined, as
    ``python -m`` would."""
    import runpy

    os.setpgid(0, 0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _die_with_parent()()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    raise SystemExit(0)


def launch(run_pid: int, module: str, args: list[str]) -> int:
    """Run ``python -m module args`` as a job of the run ``run_pid``; returns its exit status,
    or 1 when the run ended before it (see the module docstring)."""
    become_subreaper()
    for s in STOP_SIGNALS:
        signal.signal(s, _stop_on)
    try:
        run_fd = _pidfd(run_pid)
    except ProcessLookupError:
        _say(f"the run that started this job (pid {run_pid}) has already ended; nothing was run")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    # a stop signal between the fork and the child's own handlers waits until they are set
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    pid = os.fork()
    if pid == 0:  # the stage (never returns: it ends as `python -m module` ends)
        _become_stage(module, args)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    child_fd = _pidfd(pid)
    if run_fd is None or child_fd is None:  # nothing to watch with: wait for the stage
        return _exit_status(_wait(pid))
    while True:
        ready, _, _ = select.select([run_fd, child_fd], [], [])
        if child_fd in ready:
            rc = _wait(pid)
            if rc != 0:
                kill_descendants()  # what a crashed stage left behind (adopted: this is a subreaper)
            return _exit_status(rc)
        if run_fd in ready:
            for s in STOP_SIGNALS:
                signal.signal(s, signal.SIG_IGN)
            kill_descendants()
            _wait(pid)
            _say(f"the run that started this job (pid {run_pid}) ended; the job was ended with it "
                 "and reruns on the next run")
            return 1


def shell_prefix(scripts: str, env: Mapping[str, str], run_pid: int, show_log: bool) -> str:
    """What every job's shell starts with: ``scripts`` (the folder of the sealbench package)
    first on PYTHONPATH, each of ``env`` exported (where the pack and results/ are, as
    environment variables, never as job parameters: a copied pack reruns nothing; and
    ``SEALBENCH_PY``, the interpreter), and ``sealbench_job LOG MODULE ARGS...``, which runs
    ``python -m MODULE ARGS`` under this launcher bound to the run ``run_pid``, its output in LOG.
    On failure it shows the log (``show_log``; False when the compact console of the sealbench
    logger plugin shows an excerpt instead) or, when the log could not be written (a full disk),
    a sentence saying so. Braces are doubled: Snakemake formats the prefix like a command."""
    exports = f"export PYTHONPATH={shlex.quote(scripts)}${{PYTHONPATH:+:$PYTHONPATH}}; "
    exports += "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
    show = 'cat "$log" >&2' if show_log else ":"
    job = ('sealbench_job() { log="$1"; shift; '
           f'"$SEALBENCH_PY" -m sealbench.isolation.job_launch {run_pid} "$@" > "$log" 2>&1 || '
           '{ rc=$?; '
           f'if [ -s "$log" ]; then {show}; else echo "sealbench: the job failed (exit $rc) and its log is '
           'empty or could not be written: check the free space and permissions of results/ (df -h results)" >&2; '
           'fi; exit 1; }; }; ')
    return (exports + job).replace("{", "{{").replace("}", "}}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: python -m sealbench.isolation.job_launch RUN_PID MODULE [ARGS...]", file=sys.stderr)
        return 2
    return launch(int(argv[0]), argv[1], argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
