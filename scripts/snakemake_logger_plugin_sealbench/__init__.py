"""sealbench's console: a Snakemake logger plugin (`snakemake --logger sealbench`).

Snakemake finds it by its package name (snakemake-interface-logger-plugins: `LogHandler`
in a top-level package `snakemake_logger_plugin_<name>`); `pip install -e .` puts it on the
path with the `sealbench` package. The workflow profile `profiles/default/config.yaml` next to
the Snakefile selects it, so `snakemake --cores 4 gate` prints the compact console
(compact.py); `--workflow-profile none` prints Snakemake's own.

It replaces Snakemake's console handler only (a plugin that writes to the stream does); the
log file Snakemake writes under `.snakemake/log/` keeps every line. It is compact only while
a workflow executes: a dry run (`-n`), `--lint`, `--summary`, `--verbose`, `--debug-dag`,
`--quiet all` and everything printed before the run starts (a parse error, a refusal) look
exactly as Snakemake prints them. Job processes and cluster jobs never use it (Snakemake
skips logger plugins outside the main process)."""

from __future__ import annotations

import logging
import sys

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

from .compact import CHATTER, CompactConsole

__all__ = ["LogHandler"]


def _quietness(quiet) -> set[str]:
    return {str(getattr(q, "name", q)).upper() for q in (quiet or ())}


class LogHandler(LogHandlerBase):
    """Snakemake's own console until the workflow starts executing jobs, the compact one after."""

    # what the logger interface asks of a handler (abstract properties there, constants here)
    writes_to_stream = True
    writes_to_file = False
    has_filter = True
    has_formatter = True
    needs_rulegraph = False

    def __post_init__(self) -> None:
        # Snakemake's default console, built as Snakemake builds it (snakemake.logging.LoggerManager.
        # _default_streamhandler): used for everything that is not a compact run.
        from snakemake.logging import ColorizingTextHandler, DefaultFilter, DefaultFormatter

        s = self.common_settings
        self.stream = sys.stdout if s.stdout else sys.stderr
        self.full = ColorizingTextHandler(
            nocolor=s.nocolor, stream=self.stream,
            formatter=DefaultFormatter(s.quiet, s.show_failed_logs),
            filter=DefaultFilter(s.quiet, s.debug_dag, s.verbose, s.dryrun, s.printshellcmds))
        quiet = _quietness(s.quiet)
        self.compact_allowed = not (s.dryrun or s.verbose or s.debug_dag or "ALL" in quiet)
        self.compact: CompactConsole | None = None
        self.progress = "PROGRESS" not in quiet
        self.color = not s.nocolor

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.compact is None and self.compact_allowed and \
                    getattr(record, "event", None) == LogEvent.WORKFLOW_STARTED:
                self.compact = CompactConsole(self.stream, color=self.color and not self.full.nocolor,
                                              progress_lines=self.progress)
            if self.compact is None:
                if self.compact_allowed and getattr(record, "event", None) is None and \
                        CHATTER.match(str(record.msg)):
                    return  # e.g. "Assuming unrestricted shared filesystem usage."
                self.full.handle(record)
            else:
                self.compact.handle(record)
        except Exception:  # a console must never stop the run
            self.handleError(record)

    def close(self) -> None:
        if self.compact is not None:
            self.compact.close()
        super().close()
