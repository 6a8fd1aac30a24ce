"""The console of a pipeline run (issue 13, point 7): quiet by default (the workflow profile
profiles/default selects the `sealbench` logger plugin, scripts/snakemake_logger_plugin_sealbench/):
a progress line per finished task, one line per failure with its log, the decision summary at
the end and the full Snakemake log in a file it names; `--workflow-profile none` gives the full
console back. Dry runs print what Snakemake prints (the tests and users read its job table)."""

from __future__ import annotations

import io
import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake_interface_logger_plugins.common import LogEvent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pipeline_runs  # noqa: E402
from packgen import make_pack, write_config, write_task  # noqa: E402
from pipeline_runs import FinishedRun  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.testing.snakemake_output import job_counts, jobs_to_run  # noqa: E402

#: What fits on one screen, and the widest line a terminal shows unwrapped.
MAX_LINES, MAX_WIDTH = 40, 200
LOG_FILE = re.compile(r"(\S*\.snakemake/log/\S+\.snakemake\.log)")


def smk(wd: Path, *args: str) -> subprocess.CompletedProcess:
    """snakemake as the README runs it (stdout and stderr as one console, in order)."""
    return pipeline_runs.smk(wd, *args, console=True)


def log_file(wd: Path, console: str) -> Path:
    found = LOG_FILE.findall(console)
    assert found, "the console does not name the log file:\n" + console[-3000:]
    path = Path(found[-1])
    return path if path.is_absolute() else wd / path


@pytest.mark.pipeline
def test_a_run_prints_one_screen_ending_with_the_decision_and_the_log(default_run: FinishedRun) -> None:
    # the session's default run (tests/pipeline_runs.py): `--cores 2 gate` on a fresh 12-task
    # pack, its console captured as one stream; it finished (the fixture checks the exit code)
    tmp_path, out = default_run.wd, default_run.console
    lines = out.rstrip("\n").splitlines()
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines:\n{out[:6000]}"
    wide = [line for line in lines if len(line) > MAX_WIDTH]
    assert not wide, f"{len(wide)} lines over {MAX_WIDTH} characters, e.g. {wide[0][:300]}"
    # one line per finished task, each naming it
    for i in range(12):
        assert sum(1 for line in lines if re.search(rf"\bt{i:02d}\b", line)) == 1, f"t{i:02d}:\n{out}"
    # the decision summary comes after the last task line, then the log file is named
    last_task = max(n for n, line in enumerate(lines) if re.search(r"\bt\d\d\b", line))
    verdict = [n for n, line in enumerate(lines) if re.search(r"\b(NOT )?PUBLISHABLE\b", line)]
    assert verdict and verdict[0] > last_task, out
    assert "headline" in lines[verdict[0]], lines[verdict[0]]
    assert "sealbench show" in out
    assert LOG_FILE.search("\n".join(lines[-2:])), lines[-3:]
    # the file has the full log: the job table, every job with its wildcards, each finished job
    full = log_file(tmp_path, out).read_text()
    assert job_counts(full).get("run_agent") == 24, full[:3000]
    assert full.count("rule run_agent:") == 24 and full.count("Finished jobid:") == len(re.findall(
        r"^\s*jobid: ", full, re.M)) > 80
    assert "wildcards: task=t07" in full


@pytest.fixture(scope="module")
def leaky(tmp_path_factory) -> Path:
    """A pack whose task t04 is a leak suspect: its leak_check job fails."""
    wd = tmp_path_factory.mktemp("leaky")
    make_pack(wd / "pack")
    shutil.rmtree(wd / "pack" / "tasks" / "t04")
    write_task(wd / "pack" / "tasks", "t04", "s",
               title="Modeling's separability_matrix does not compute separability correctly for nested models")
    write_config(wd / "cfg.yaml", wd / "pack")
    return wd


@pytest.mark.pipeline
def test_a_failing_job_is_one_line_with_rule_task_and_log(leaky: Path) -> None:
    res = smk(leaky, "--cores", "2", "gate")
    out = res.stdout
    assert res.returncode != 0
    lines = out.rstrip("\n").splitlines()
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines:\n{out[:6000]}"
    assert not [line for line in lines if len(line) > MAX_WIDTH], out
    full = log_file(leaky, out).read_text()
    rule = re.search(r"Error in rule (\w+):", full).group(1)  # the failed job, as the full log names it
    job_log = re.search(r"log: (\S+) \(check log file", full).group(1)
    named = [line for line in lines if job_log in line]
    assert len(named) == 1, f"the log is named {len(named)} times:\n{out}"
    rest = named[0].replace(job_log, "")
    assert rule in rest, named[0]
    task = re.match(r"results/tasks/([^/]+)/", job_log)
    assert not task or task.group(1) in rest, named[0]  # a task's job names the task
    assert not [line for line in lines if "Error in rule" in line or "Command '" in line], out
    # the reason stays on screen (an excerpt of the job's log), the whole log stays in its file
    assert "LEAK SUSPECT: task 't04'" in out and "denylist.txt:2" in out
    assert "LEAK SUSPECT: task 't04'" in (leaky / job_log).read_text()
    assert lines[-1].startswith("Run stopped after") and job_log not in lines[-1]


@pytest.mark.pipeline
def test_the_full_console_is_one_switch_away(leaky: Path) -> None:
    res = smk(leaky, "--cores", "2", "--workflow-profile", "none", "gate")
    assert res.returncode != 0
    assert "Error in rule " in res.stdout and "    jobid: " in res.stdout  # Snakemake's job blocks
    assert "LEAK SUSPECT: task 't04'" in res.stdout  # the failing job's log, as Snakemake shows it
    assert "FAILED" not in res.stdout


@pytest.mark.pipeline
def test_a_dry_run_prints_what_snakemake_prints(tmp_path: Path) -> None:
    make_pack(tmp_path / "pack")
    write_config(tmp_path / "cfg.yaml", tmp_path / "pack")
    cmd = pipeline_runs.smk_cmd(tmp_path, "-n", "gate")
    quiet = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    full = subprocess.run(cmd + ["--workflow-profile", "none"], capture_output=True, text=True, cwd=tmp_path)
    assert quiet.returncode == 0 and full.returncode == 0, quiet.stderr[-3000:]
    assert "profiles/default" in quiet.stderr  # Snakemake says which profile it read
    assert job_counts(quiet.stdout) == job_counts(full.stdout) and job_counts(quiet.stdout)["run_agent"] == 24
    assert quiet.stdout.count("rule run_agent:") == full.stdout.count("rule run_agent:") == 24


# ------------------------------------------------------------------ the plugin on its own (fast)


def _record(msg, level=logging.INFO, **extra) -> logging.LogRecord:
    rec = logging.LogRecord("snakemake.logging", level, __file__, 1, msg, None, None)
    rec.__dict__.update(extra)
    return rec


def _handler(monkeypatch, dryrun: bool = False):
    from types import SimpleNamespace

    from snakemake_logger_plugin_sealbench import LogHandler

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout" if dryrun else "stderr", out)
    settings = SimpleNamespace(printshellcmds=False, nocolor=True, quiet=None, debug_dag=False, verbose=False,
                               show_failed_logs=False, stdout=dryrun, dryrun=dryrun)
    return LogHandler(settings, None), out


def _job(jobid, rule, log=(), output=(), **wildcards):
    return _record(f" Rule: {rule}, Jobid: {jobid}", event=LogEvent.JOB_INFO, jobid=jobid, rule_name=rule,
                   rule_msg=None, local=True, input=[], output=list(output), log=list(log), benchmark=None,
                   wildcards=wildcards, reason="Missing output files", resources={}, priority=0, threads=1,
                   indent=False, is_checkpoint=False, printshellcmd=True, is_handover=False, shellcmd="")


@pytest.mark.unit
def test_the_handler_answers_what_the_logger_interface_asks(monkeypatch) -> None:
    handler, _ = _handler(monkeypatch)
    answers = {k: getattr(handler, k) for k in ("writes_to_stream", "writes_to_file", "has_filter", "has_formatter",
                                                "needs_rulegraph")}
    assert answers == {"writes_to_stream": True, "writes_to_file": False, "has_filter": True, "has_formatter": True,
                       "needs_rulegraph": False}
    assert all(isinstance(v, bool) for v in answers.values())


@pytest.mark.unit
def test_the_compact_console_prints_tasks_failures_and_the_end(monkeypatch, tmp_path: Path) -> None:
    from sealbench.core.run_console import PLAN_ATTR, plan

    handler, out = _handler(monkeypatch)
    score = tmp_path / "score.json"
    score.write_text(json.dumps({"solver": "fixer", "status": "pass"}))
    joblog = tmp_path / "leak_check.log"
    joblog.write_text("".join(f"line {i}\n" for i in range(40)) + "LEAK SUSPECT: task 't2' matches\n")
    jobs = [SimpleNamespace(wildcards_dict=w) for w in ({"task": "t1"}, {"task": "t1"}, {"key": "k"}, {"task": "t2"})]
    msg, payload = plan(jobs, [str(tmp_path / "x.snakemake.log")])
    records = [
        _record("Assuming unrestricted shared filesystem usage."),
        _record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED),
        _record("Building DAG of jobs..."),
        _record("Job stats:\n...", event=LogEvent.RUN_INFO, stats={"total": 4}),
        _record(msg, **{PLAN_ATTR: payload}),
        _record("Select jobs to execute..."),
        _job(1, "run_agent", task="t1"), _job(2, "hidden_score", output=[str(score)], task="t1"),
        _job(3, "split", key="k"), _job(4, "leak_check", log=[str(joblog)], task="t2"),
        _record("Shell command: x", event=LogEvent.SHELLCMD, shellcmd="x"),
        _record("Finished jobid: 3", event=LogEvent.JOB_FINISHED, job_id=3),
        _record(None, event=LogEvent.PROGRESS, done=1, total=4),
        _record("Finished jobid: 1", event=LogEvent.JOB_FINISHED, job_id=1),
        _record("Finished jobid: 2", event=LogEvent.JOB_FINISHED, job_id=2),
        _record("RuleException:\nCalledProcessError in file x, line 3:\nCommand 'a' returned non-zero exit status 1.",
                logging.ERROR, event=LogEvent.ERROR, exception="RuleException"),
        _record("Error in rule leak_check, jobid: 4", logging.ERROR, event=LogEvent.JOB_ERROR, rule_name="leak_check",
                rule_msg=None, jobid=4, input=[], output=[], log=[str(joblog)], conda_env=None, container_img=None,
                aux={}, indent=False, shellcmd="x"),
        _record("a warning " + "w" * 300, logging.WARNING),
        _record(f"Complete log(s): {tmp_path / 'x.snakemake.log'}"),
        _record("Elapsed time: 0:01:02.51"),
        _record("WorkflowError:\nAt least one job did not complete successfully.", logging.ERROR,
                event=LogEvent.ERROR, exception="WorkflowError"),
    ]
    for rec in records:
        handler.emit(rec)
    handler.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == f"sealbench: 4 jobs to run, 2 tasks; the full log: {tmp_path / 'x.snakemake.log'}"
    assert lines[1] == "[1/4] split: tune and holdout"
    assert lines[2] == "[3/4] t1 done (2 jobs): fixer pass"
    assert lines[3] == f"FAILED leak_check t2; its log: {joblog}"
    assert lines[4:9] == [f"    line {i}" for i in range(5)] and lines[9] == "    … 22 more lines …"
    assert lines[10] == "    line 27" and lines[23] == "    LEAK SUSPECT: task 't2' matches"
    assert lines[24].startswith("a warning www") and len(lines[24]) == 200
    assert lines[25] == f"Run stopped after 1 min 2 s; the full log: {tmp_path / 'x.snakemake.log'}"
    assert len(lines) == 26, lines
    assert jobs_to_run(out.getvalue()) == 4  # what bench/run_all.py reads from a run


@pytest.mark.unit
def test_a_failed_group_job_names_its_log_and_the_jobs_it_left_unfinished(monkeypatch, tmp_path: Path) -> None:
    handler, out = _handler(monkeypatch)
    glog = tmp_path / "local-1.log"
    glog.write_text("Error in rule run_agent:\n    jobid: 5\n")
    (tmp_path / "done.json").write_text("{}")
    handler.emit(_record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED))
    handler.emit(_record("Error in group task", logging.ERROR, event=LogEvent.GROUP_ERROR, groupid="task",
                         aux_logs=[str(glog)], job_error_info=[]))
    for jobid, rule, output in ((4, "hash_pack", tmp_path / "done.json"), (5, "run_agent", tmp_path / "no.json"),
                                (6, "hidden_score", tmp_path / "no2.json")):
        handler.emit(_record("Error", logging.ERROR, event=LogEvent.JOB_ERROR, rule_name=rule, rule_msg=None,
                             jobid=jobid, input=[], output=[str(output)], log=[f"{rule}.log"], conda_env=None,
                             container_img=None, aux={}, indent=True, shellcmd="x"))
    assert out.getvalue().splitlines() == [
        f"FAILED group job task; its log: {glog}", "    Error in rule run_agent:", "        jobid: 5",
        "  unfinished in the group: run_agent; its log: run_agent.log",
        "  unfinished in the group: hidden_score; its log: hidden_score.log"]


@pytest.mark.unit
def test_a_dry_run_and_what_precedes_a_run_look_as_snakemake_prints_them(monkeypatch) -> None:
    handler, out = _handler(monkeypatch, dryrun=True)
    handler.emit(_record("Workflow has started!", event=LogEvent.WORKFLOW_STARTED, quietness=None))
    handler.emit(_job(7, "run_agent", task="t1"))
    handler.emit(_record("Job stats:\njob  count\n", event=LogEvent.RUN_INFO, stats={"total": 1}))
    assert "rule run_agent:" in out.getvalue() and "jobid: 7" in out.getvalue() and "wildcards: task=t1" in out.getvalue()
    assert "Job stats:" in out.getvalue()
    handler, out = _handler(monkeypatch)
    handler.emit(_record("SyntaxError in file Snakefile, line 3", logging.ERROR, event=LogEvent.ERROR))
    assert out.getvalue() == "SyntaxError in file Snakefile, line 3\n"


@pytest.mark.unit
def test_the_decision_summary_is_short() -> None:
    from sealbench.core.run_console import WIDTH, summary_lines

    d = {"experiment": "abc", "publishable": False, "headline": None, "headline_metric": "x pass rate",
         "reasons": [{"code": "LEAK_SUSPECT", "sentence": "word " * 60}, {"code": "UNSANDBOXED", "sentence": "s."}],
         "notes": [{"code": "UNDERPOWERED", "sentence": "n."}], "allowed_sentences": [],
         "comparison": {"candidate": "a", "baseline": "b", "delta": 0.25, "ci_low": -0.1, "ci_high": 0.6,
                        "matched_tasks": 9, "split": "holdout", "verdict_label": "NO_WINNER + UNDERPOWERED"}}
    d["notes"].append({"code": "ZERO_WIDTH_INTERVAL", "sentence": "z."})
    lines = summary_lines(d, "results/latest")
    assert lines[0] == "NOT PUBLISHABLE: no headline number, x pass rate"
    assert lines[1].startswith("  refused LEAK_SUSPECT: word") and len(lines) == 10
    assert "  refused UNSANDBOXED: s." in lines and "  notes: UNDERPOWERED, ZERO_WIDTH_INTERVAL" in lines
    assert "  a - b: delta +0.250 [-0.100, +0.600] on 9 holdout tasks: NO_WINNER + UNDERPOWERED" in lines
    assert "  may publish: nothing" in lines and "sealbench show" in lines[-1]
    d["allowed_sentences"] = ["The headline sentence.", "Another.", "A third."]
    lines = summary_lines(d, "results/latest")
    assert "  may publish: The headline sentence." in lines and "Another." not in "\n".join(lines)
    assert lines[-1] == "  More: `sealbench show` (2 more sentences); results/latest/report.html (experiment abc)"
    assert max(map(len, lines)) <= WIDTH
