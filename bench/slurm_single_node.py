"""sealbench on a real SLURM cluster of one node: the slurm profile reaches the local decision.

    python bench/slurm_single_node.py [--tasks 12] [--keep] [--state-dir DIR] [--no-install]
    python bench/slurm_single_node.py --stop [--state-dir DIR]     # stop daemons left by --keep

Run as root on a Debian/Ubuntu machine (a container is fine). What it does, in order:

1. Installs what is missing: ``apt-get install slurm-wlm munge slurmdbd mariadb-server`` (only
   the packages whose programs are absent), and ``pip install`` the
   ``snakemake-executor-plugin-slurm`` version pinned in pyproject.toml's ``cluster`` extra
   into this interpreter's environment (when absent or another version).
2. Starts a one-node cluster itself, every daemon in the foreground (``-D``/``-F``) as its
   child, logs and state under ``--state-dir`` (default /var/tmp/sealbench-slurm):
   munged (reused when one already answers), a private MariaDB (its own datadir and a TCP
   port on 127.0.0.1; the system's MariaDB is not touched), slurmdbd (job accounting, so
   ``sacct`` and ``sacctmgr`` answer as on a real cluster), slurmctld and slurmd. It writes
   /etc/slurm/slurm.conf and /etc/slurm/slurmdbd.conf (marked as written by this script; an
   unmarked file there is never overwritten: the script stops) for this host: node name from
   ``hostname -s``, CPUs from ``nproc``, RealMemory 95 % of MemTotal (/proc/meminfo), no cgroup
   plugins (``proctrack/linuxproc``, ``task/none``; cgroups are often unavailable in a
   container), partition ``sealbench``, accounting enforced (``associations``) with an account
   ``sealbench`` holding the current user, the account and partition the profile is given.
   It waits until ``sinfo`` shows the node idle.
3. Makes a pack of ``--tasks`` tasks with bench/make_pack.py, copies it byte-identically into
   two working folders with the same config (``pack: pack``, sandbox off as in every bench
   run), and runs ``snakemake gate`` in each, one after the other: with
   ``--profile profiles/local``, and with ``--profile profiles/slurm`` plus
   the profile's own ``default-resources`` with its two FILL_IN values replaced by this
   cluster's account and partition, ``--cores`` the node's CPU count (the most a group job may
   ask for; the profile's 8 is for real nodes) and status polling every ``--poll`` seconds (the
   profile's 30 s/40 s suit a busy real queue, not a one-node bench; the report says what was
   used). A SLURM job pending for a reason that never clears (e.g. more CPUs than the node has,
   Reason=PartitionConfig) stops the run after 30 s instead of waiting forever.
4. Compares the two decision.json files: the whole file (decision.json has no run-specific
   field: no timestamp, no absolute path; digests, verdict, reasons and numbers must all be
   equal), and the experiment id results/latest points at. It prints a short report: SLURM and
   plugin versions, the SLURM jobs of the run (from ``sacct``), the wall time of both runs and
   ``same decision: yes/no`` with the fields that differ.
5. Stops the daemons it started (``--keep`` leaves them running; ``--stop`` stops them later).

Exit code 0 when both runs succeeded and the decisions are the same; 1 when they differ or a run
failed; 2 when the cluster could not be set up (the message says what is missing).
Not a test and not run by CI (tests/pipeline/test_slurm_single_node.py runs it only where ``sbatch``
exists and the environment variable SEALBENCH_SLURM_BENCH=1 is set).
"""

from __future__ import annotations

import argparse
import getpass
import importlib.metadata
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

from make_pack import make_pack, write_config  # noqa: E402

from sealbench.testing.json_diff import json_diff  # noqa: E402

MARK = "# written by sealbench bench/slurm_single_node.py (safe to delete)"
SLURM_CONF = Path("/etc/slurm/slurm.conf")
SLURMDBD_CONF = Path("/etc/slurm/slurmdbd.conf")
CLUSTER = "sealbench"
PARTITION = "sealbench"
ACCOUNT = "sealbench"
PLUGIN = "snakemake-executor-plugin-slurm"
#: program -> Debian package that provides it
PROGRAMS = {"sbatch": "slurm-client", "slurmctld": "slurmctld", "slurmd": "slurmd", "munged": "munge",
            "slurmdbd": "slurmdbd", "mariadbd": "mariadb-server", "mariadb-install-db": "mariadb-server"}
#: the daemons in start order (stopped in reverse)
DAEMONS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")


class SetupError(RuntimeError):
    """The cluster could not be set up; the message says what is missing."""


def log(msg: str) -> None:
    print(f"[slurm-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(*cmd: str, check: bool = True, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=env)
    if check and res.returncode != 0:
        raise SetupError(f"`{' '.join(cmd)}` failed ({res.returncode}): {(res.stderr or res.stdout).strip()[-1500:]}")
    return res


# ------------------------------------------------------------------------------ 1. install

def pinned_plugin() -> str:
    """The plugin requirement pinned in pyproject.toml's `cluster` extra, e.g. 'pkg==2.8.0'."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for req in extras.get("cluster", []):
        if req.replace(" ", "").startswith(PLUGIN + "=="):
            return req.replace(" ", "")
    raise SetupError(f"pyproject.toml has no pinned {PLUGIN} in [project.optional-dependencies] cluster")


def ensure_installed(allow: bool) -> None:
    missing = sorted({pkg for prog, pkg in PROGRAMS.items() if shutil.which(prog) is None})
    if missing:
        if not allow:
            raise SetupError(f"missing Debian packages {missing} (and --no-install was given)")
        if os.geteuid() != 0:
            raise SetupError(f"missing Debian packages {missing}; run as root to install them")
        pkgs = sorted(set(missing) | {"slurm-wlm", "munge"})
        log(f"apt-get install {' '.join(pkgs)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if sh("apt-get", "install", "-y", "-q", *pkgs, check=False, timeout=1800, env=env).returncode != 0:
            sh("apt-get", "update", "-q", timeout=600, env=env)
            sh("apt-get", "install", "-y", "-q", *pkgs, timeout=1800, env=env)
    req = pinned_plugin()
    want = req.split("==", 1)[1]
    try:
        have = importlib.metadata.version(PLUGIN)
    except importlib.metadata.PackageNotFoundError:
        have = None
    if have != want:
        if not allow:
            raise SetupError(f"{PLUGIN} {have or 'not installed'}, want {want} (and --no-install was given)")
        log(f"pip install {req} into {sys.prefix}")
        sh(sys.executable, "-m", "pip", "install", "-q", req, timeout=900)


# ------------------------------------------------------------------------------ 2. the cluster

def free_port(preferred: int) -> int:
    for port in (preferred, 0):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return s.getsockname()[1]
            except OSError:
                continue
    raise SetupError("no free TCP port")


def host_facts() -> dict:
    host = sh("hostname", "-s").stdout.strip()
    cpus = int(sh("nproc").stdout.strip())
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal:"))
    return {"host": host, "cpus": cpus, "mem_mb": int(mem_kb / 1024 * 0.95)}


def write_marked(path: Path, text: str, mode: int) -> None:
    if path.exists() and MARK not in path.read_text(errors="replace"):
        raise SetupError(f"{path} exists and was not written by this script: this machine has its own SLURM "
                         f"configuration (use the slurm profile on it directly), or move the file away")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def slurm_conf(f: dict, st: Path, ports: dict) -> str:
    return f"""{MARK}
# One node ({f['host']}), daemons as root, no cgroup plugins, accounting through slurmdbd.
ClusterName={CLUSTER}
SlurmctldHost={f['host']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort={ports['ctld']}
SlurmdPort={ports['d']}
StateSaveLocation={st}/spool/slurmctld
SlurmdSpoolDir={st}/spool/slurmd
SlurmctldPidFile={st}/run/slurmctld.pid
SlurmdPidFile={st}/run/slurmd.pid
SlurmctldLogFile={st}/log/slurmctld.log
SlurmdLogFile={st}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=300
InactiveLimit=0
KillWait=30
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports['dbd']}
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
NodeName={f['host']} NodeAddr=127.0.0.1 CPUs={f['cpus']} RealMemory={f['mem_mb']} State=UNKNOWN
PartitionName={PARTITION} Nodes={f['host']} Default=YES MaxTime=INFINITE State=UP
"""


def slurmdbd_conf(st: Path, ports: dict, password: str) -> str:
    return f"""{MARK}
AuthType=auth/munge
DbdHost=localhost
DbdPort={ports['dbd']}
SlurmUser=root
LogFile={st}/log/slurmdbd.log
PidFile={st}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['db']}
StorageUser=slurm
StoragePass={password}
StorageLoc=slurm_acct_db
"""


class Cluster:
    """The daemons this script started (pids also in STATE/run/bench-pids.json for --stop)."""

    def __init__(self, state: Path):
        self.state = state
        self.procs: dict[str, subprocess.Popen] = {}
        self.pidfile = state / "run" / "bench-pids.json"

    def spawn(self, name: str, *cmd: str) -> None:
        out = open(self.state / "log" / f"{name}.stdout", "ab")
        self.procs[name] = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        out.close()
        self.pidfile.write_text(json.dumps({n: [p.pid, Path(p.args[0]).name] for n, p in self.procs.items()}))
        log(f"started {name} (pid {self.procs[name].pid}): {' '.join(cmd)}")

    def alive(self, name: str) -> bool:
        return self.procs[name].poll() is None

    def log_tail(self, name: str, n: int = 15) -> str:
        for p in (self.state / "log" / f"{name}.log", self.state / "log" / f"{name}.stdout"):
            if p.exists() and p.stat().st_size:
                return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
        return "(no log)"

    def wait_for(self, what: str, probe, timeout: float, daemon: str | None = None) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if probe():
                return
            if daemon and not self.alive(daemon):
                raise SetupError(f"{daemon} exited ({self.procs[daemon].returncode}) before {what}:\n"
                                 f"{self.log_tail(daemon)}")
            time.sleep(1)
        raise SetupError(f"timed out after {timeout:.0f} s waiting for {what}"
                         + (f"; {daemon} log:\n{self.log_tail(daemon)}" if daemon else ""))

    def stop(self) -> None:
        for name in reversed(DAEMONS):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log(f"stopped {name}")
        self.pidfile.unlink(missing_ok=True)


def stop_recorded(state: Path) -> int:
    """--stop: end the daemons a --keep run recorded (by pid, checking it is still that program)."""
    pidfile = state / "run" / "bench-pids.json"
    if not pidfile.exists():
        print(f"nothing to stop ({pidfile} absent)")
        return 0
    pids = json.loads(pidfile.read_text())
    for name in reversed(DAEMONS):
        if name not in pids:
            continue
        pid, argv0 = pids[name]
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if Path(cmdline).name not in (name, argv0):
            continue  # the pid was reused
        os.kill(pid, signal.SIGTERM)
        for _ in range(30):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(1)
        print(f"stopped {name} ({pid})")
    pidfile.unlink()
    return 0


def munge_ok() -> bool:
    munge = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
    if munge.returncode != 0:
        return False
    return subprocess.run(["unmunge"], input=munge.stdout, capture_output=True, timeout=10).returncode == 0


def start_cluster(cl: Cluster, facts: dict) -> dict:
    st = cl.state
    if os.geteuid() != 0:
        raise SetupError("run as root: the daemons, /etc/slurm and /run/munge need it")
    for d in ("log", "run", "spool/slurmctld", "spool/slurmd", "mysql"):
        (st / d).mkdir(parents=True, exist_ok=True)
    # fresh node state every time; the controller's state is kept (job ids go on from the last
    # run's, which the accounting database already holds) and so is the accounting database
    for d in ("spool/slurmd",):
        shutil.rmtree(st / d)
        (st / d).mkdir()
    for p in (st / "log").glob("slurm*"):
        p.unlink()

    # munge: the Debian package made a key; reuse a munged that already answers
    if munge_ok():
        log("munged already running: reused (and left running)")
    else:
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            sh("mungekey", "--create", "--keyfile", str(key))
            shutil.chown(key, "munge", "munge")
            key.chmod(0o400)
        run_munge = Path("/run/munge")
        run_munge.mkdir(parents=True, exist_ok=True)
        shutil.chown(run_munge, "munge", "munge")
        run_munge.chmod(0o755)
        Path("/var/log/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/var/log/munge", "munge", "munge")
        # setpriv execs (the pid stays munged's), as the munge user that owns the key
        cl.spawn("munged", "setpriv", "--reuid=munge", "--regid=munge", "--init-groups", "munged", "--foreground",
                 "--force",
                 f"--log-file={st}/log/munged.log")
        cl.wait_for("munge to answer", munge_ok, 30, "munged")

    # a private MariaDB for slurmdbd
    ports = {"db": free_port(3307), "dbd": free_port(6819), "ctld": free_port(6817), "d": free_port(6818)}
    datadir, sock = st / "mysql" / "data", st / "run" / "mysqld.sock"
    shutil.chown(st / "mysql", "mysql", "mysql")
    if not (datadir / "mysql").exists():
        log("mariadb-install-db (private datadir)")
        sh("mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=mysql",
           "--auth-root-authentication-method=socket", "--skip-test-db", timeout=300)
    os.chmod(st / "run", 0o777)
    cl.spawn("mariadbd", "mariadbd", "--no-defaults", f"--datadir={datadir}", "--user=mysql", f"--socket={sock}",
             f"--port={ports['db']}", "--bind-address=127.0.0.1", f"--pid-file={st}/run/mariadbd.pid",
             f"--log-error={st}/log/mariadbd.log", "--innodb-use-native-aio=0",
             "--innodb-buffer-pool-size=256M", "--innodb-lock-wait-timeout=900", "--skip-name-resolve")
    sql = ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot"]
    cl.wait_for("MariaDB", lambda: sh(*sql, "-e", "select 1", check=False).returncode == 0, 120, "mariadbd")
    password = secrets.token_hex(12)
    sh(*sql, "-e", "CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
       f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
       f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
       "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;")

    write_marked(SLURMDBD_CONF, slurmdbd_conf(st, ports, password), 0o600)
    write_marked(SLURM_CONF, slurm_conf(facts, st, ports), 0o644)

    cl.spawn("slurmdbd", "slurmdbd", "-D")
    cl.wait_for("slurmdbd (sacctmgr list cluster)",
                lambda: sh("sacctmgr", "-n", "-P", "list", "cluster", check=False, timeout=30).returncode == 0,
                120, "slurmdbd")
    if CLUSTER not in sh("sacctmgr", "-n", "-P", "list", "cluster", "format=cluster").stdout.split():
        sh("sacctmgr", "-i", "add", "cluster", CLUSTER)
    cl.spawn("slurmctld", "slurmctld", "-D", "-i")
    cl.wait_for("slurmctld (scontrol ping)",
                lambda: "UP" in sh("scontrol", "ping", check=False, timeout=30).stdout, 120, "slurmctld")
    cl.spawn("slurmd", "slurmd", "-D")

    def node_state() -> str:
        return sh("sinfo", "-h", "-N", "-n", facts["host"], "-o", "%t", check=False, timeout=30).stdout.strip()

    def idle() -> bool:
        if not cl.alive("slurmd"):
            return False
        state = node_state()
        if state.rstrip("*~#") in ("drain", "drng", "inval", "fail"):
            reason = sh("sinfo", "-h", "-R", "-o", "%E", check=False).stdout.strip()
            raise SetupError(f"node {facts['host']} is {state}: {reason}\nslurmd log:\n{cl.log_tail('slurmd')}")
        return state == "idle"

    cl.wait_for(f"sinfo to show {facts['host']} idle", idle, 120, "slurmd")

    # the account the profile submits with (AccountingStorageEnforce=associations)
    user = getpass.getuser()
    accounts = sh("sacctmgr", "-n", "-P", "list", "account", "format=account").stdout.split()
    if ACCOUNT not in accounts:
        sh("sacctmgr", "-i", "add", "account", ACCOUNT, f"cluster={CLUSTER}", "description=sealbench bench",
           "organization=sealbench")
    assoc = sh("sacctmgr", "-n", "-P", "list", "assoc", f"user={user}", "format=account").stdout.split()
    if ACCOUNT not in assoc:
        sh("sacctmgr", "-i", "add", "user", user, f"account={ACCOUNT}", f"cluster={CLUSTER}")
    # a smoke job through the whole chain (sbatch -> slurmd -> sacct) before the pipeline
    jid = sh("sbatch", "--parsable", "-A", ACCOUNT, "-p", PARTITION, "-n1", "-c1", "--mem", "100",
             "-o", "/dev/null", "--wrap", "srun -n1 true").stdout.strip().split(";")[0]
    cl.wait_for(f"smoke job {jid} in sacct as COMPLETED",
                lambda: sh("sacct", "-X", "-n", "-P", "-j", jid, "-o", "State", check=False).stdout.strip() == "COMPLETED",
                120, "slurmd")
    log(f"cluster up: node {facts['host']} idle, smoke job {jid} COMPLETED in sacct")
    return ports


# ------------------------------------------------------------------------------ 3. the two runs

def slurm_profile_resources(account: str, partition: str) -> list[str]:
    """The slurm profile's default-resources with its FILL_IN values replaced (the CLI option
    replaces the profile's whole list, so the other entries are passed along)."""
    prof = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    res = dict(prof.get("default-resources") or {})
    res["slurm_account"], res["slurm_partition"] = account, partition
    return [f"{k}={v}" for k, v in res.items()]


#: squeue reasons of a pending job that no amount of waiting fixes on this cluster
HOPELESS = ("PartitionConfig", "BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit", "InvalidAccount",
            "InvalidQOS", "AssocMaxCpuPerJobLimit", "AssocMaxJobsLimit", "ReqNodeNotAvail")


def stuck_jobs() -> list[str]:
    """Pending jobs whose reason means they will never start (e.g. more cpus than the node has)."""
    out = sh("squeue", "-h", "-t", "PD", "-o", "%i|%r|%C|%m", check=False).stdout
    return [line for line in out.splitlines() if any(r in line.split("|")[1] for r in HOPELESS)]


def stop_run(proc: subprocess.Popen) -> None:
    """SIGINT (the slurm plugin cancels its jobs), then SIGTERM, then SIGKILL."""
    for sig, wait in ((signal.SIGINT, 60), (signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def run_gate(workdir: Path, *args: str, timeout: float, watch_queue: bool = False) -> tuple[int, float, str]:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(workdir / "cfg.yaml"), *args, "gate"]
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    t0 = time.perf_counter()
    stuck_since, note = None, ""
    with open(workdir / "snakemake.out", "w") as out:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        while proc.poll() is None:
            try:
                proc.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.perf_counter() - t0 > timeout:
                note = f"\n[slurm-bench] no result after {timeout:.0f} s: stopped\n"
                stop_run(proc)
                break
            stuck = stuck_jobs() if watch_queue else []
            if not stuck:
                stuck_since = None
            elif stuck_since is None:
                stuck_since = time.perf_counter()
            elif time.perf_counter() - stuck_since > 30:
                note = ("\n[slurm-bench] SLURM jobs that can never start (id|reason|cpus|mem): "
                        + "; ".join(stuck) + f" (node: {sh('sinfo', '-h', '-N', '-o', '%N cpus=%c mem=%m').stdout.strip()})"
                        "; stopped\n")
                stop_run(proc)
                break
    rc = proc.returncode if proc.returncode is not None else 124
    if note:
        with open(workdir / "snakemake.out", "a") as out:
            out.write(note)
        rc = rc or 124
    return rc, time.perf_counter() - t0, (workdir / "snakemake.out").read_text(errors="replace")


def sacct_jobs(since: str) -> list[dict]:
    res = sh("sacct", "-X", "-n", "-P", "-a", "--starttime", since, "-o",
             "JobID,JobName%60,Account,Partition,State,ExitCode,Elapsed,AllocCPUS,ReqMem", check=False)
    keys = ("id", "name", "account", "partition", "state", "exit", "elapsed", "cpus", "mem")
    return [dict(zip(keys, line.split("|"))) for line in res.stdout.splitlines() if line.strip()]


def run_both(n_tasks: int, cores: int, poll: int, timeout: float, keep_dirs: bool) -> int:
    base = Path(tempfile.mkdtemp(prefix="sealbench-slurm-bench-", dir="/var/tmp"))
    log(f"working folders under {base}")
    make_pack(base / "pack-src", n_tasks)
    runs = {"local": base / "local", "slurm": base / "slurm"}
    for wd in runs.values():
        wd.mkdir()
        shutil.copytree(base / "pack-src", wd / "pack")
        write_config(wd / "cfg.yaml", Path("pack"))  # relative: the two configs are the same bytes
    assert (runs["local"] / "cfg.yaml").read_bytes() == (runs["slurm"] / "cfg.yaml").read_bytes()

    log("local run: --profile profiles/local")
    rc_l, secs_l, out_l = run_gate(runs["local"], "--profile", str(ROOT / "profiles/local"), timeout=timeout)
    log(f"local run: exit {rc_l} in {secs_l:.0f} s")

    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 1))
    resources = slurm_profile_resources(ACCOUNT, PARTITION)
    # --cores: a group job may ask for at most the node's cpus (the profile's `cores` is for real nodes)
    slurm_args = ["--profile", str(ROOT / "profiles/slurm"), "--default-resources", *resources,
                  "--cores", str(cores), "--seconds-between-status-checks", str(poll),
                  "--slurm-init-seconds-before-status-checks", str(poll)]
    log(f"slurm run: {' '.join(slurm_args)}")
    rc_s, secs_s, out_s = run_gate(runs["slurm"], *slurm_args, timeout=timeout, watch_queue=True)
    leftover = sh("squeue", "-h", "-n", ",".join(sorted({j for j in re.findall(r"SLURM run ID: (\S+)", out_s)})) or "none",
                  "-o", "%i", check=False).stdout.split()
    if leftover:
        sh("scancel", *leftover, check=False)
    log(f"slurm run: exit {rc_s} in {secs_s:.0f} s")
    jobs = sacct_jobs(since)

    versions = {"slurm": sh("sinfo", "-V").stdout.strip(), "plugin": importlib.metadata.version(PLUGIN),
                "jobstep plugin": importlib.metadata.version(PLUGIN + "-jobstep"),
                "snakemake": importlib.metadata.version("snakemake")}
    print("sealbench on a one-node SLURM cluster (bench/slurm_single_node.py)")
    print(f"  {versions['slurm']}; {PLUGIN} {versions['plugin']} (jobstep {versions['jobstep plugin']}); "
          f"snakemake {versions['snakemake']}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print(f"  pack: {n_tasks} tasks (bench/make_pack.py), agents fixer vs idle, sandbox off; folders {base}")
    print(f"  local run  (--profile profiles/local): exit {rc_l}, {secs_l:.0f} s wall")
    print(f"  slurm run  (--profile profiles/slurm, account={ACCOUNT} partition={PARTITION}, --cores {cores}, "
          f"status polls every {poll} s): exit {rc_s}, {secs_s:.0f} s wall")
    submitted = len(re.findall(r"has been submitted with SLURM jobid", out_s))
    print(f"  SLURM jobs: {submitted} submitted (the plugin's log), {len(jobs)} in sacct:")
    for j in jobs:
        print(f"    {j['id']:>6} {j['state']:<10} exit {j['exit']:<5} {j['elapsed']} cpus={j['cpus']} mem={j['mem']} "
              f"account={j['account']} partition={j['partition']}")
    failed = []
    for name, rc, out in (("local", rc_l, out_l), ("slurm", rc_s, out_s)):
        if rc != 0:
            failed.append(name)
            print(f"  the {name} run FAILED (exit {rc}); last lines of {runs[name] / 'snakemake.out'}:")
            print("\n".join("    " + line for line in out.splitlines()[-40:]))
    if failed:
        print("  same decision: no (a run failed)")
        return 1
    dec = {n: json.loads((wd / "results" / "latest" / "decision.json").read_text()) for n, wd in runs.items()}
    exp = {n: os.readlink(wd / "results" / "latest") for n, wd in runs.items()}
    diff = json_diff(dec["local"], dec["slurm"], ("local", "slurm"))
    if exp["local"] != exp["slurm"]:
        diff.insert(0, f"results/latest: local {exp['local']} != slurm {exp['slurm']}")
    d = dec["local"]
    print(f"  decision (local): publishable={d['publishable']} headline={d['headline']} n={d['n']} passes={d['passes']} "
          f"reasons={[r['code'] for r in d['reasons']]} experiment={d['experiment']}")
    print("  compared: the whole decision.json (no field is run-specific: no timestamps or absolute paths) "
          "and the experiment id")
    print(f"  same decision: {'yes' if not diff else 'no'}")
    for line in diff[:40]:
        print(f"    {line}")
    if not diff and not keep_dirs:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if not diff else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12, help="tasks in the generated pack (default 12)")
    ap.add_argument("--state-dir", type=Path, default=Path("/var/tmp/sealbench-slurm"),
                    help="daemon logs, spool, the private MariaDB datadir (default /var/tmp/sealbench-slurm)")
    ap.add_argument("--keep", action="store_true", help="leave the daemons running (stop them with --stop)")
    ap.add_argument("--stop", action="store_true", help="stop the daemons a --keep run left, then exit")
    ap.add_argument("--no-install", action="store_true", help="never apt-get/pip install; fail if something is missing")
    ap.add_argument("--poll", type=int, default=5, help="seconds between the plugin's status checks (default 5)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per pipeline run (default 1800)")
    ap.add_argument("--keep-dirs", action="store_true", help="keep the working folders even when the decisions match")
    args = ap.parse_args(argv)
    state = args.state_dir.resolve()
    if args.stop:
        return stop_recorded(state)
    if (state / "run" / "bench-pids.json").exists():
        print(f"daemons from an earlier --keep run are recorded in {state}/run/bench-pids.json: "
              f"run with --stop first", file=sys.stderr)
        return 2
    cl = Cluster(state)
    rc = 2
    try:
        ensure_installed(not args.no_install)
        state.mkdir(parents=True, exist_ok=True)
        for d in ("log", "run"):
            (state / d).mkdir(exist_ok=True)
        facts = host_facts()
        start_cluster(cl, facts)
        rc = run_both(args.tasks, facts["cpus"], args.poll, args.timeout, args.keep_dirs)
    except SetupError as exc:
        print(f"slurm bench: cluster set-up failed: {exc}", file=sys.stderr)
        rc = 2
    finally:
        if args.keep and cl.procs:
            print(f"  daemons left running (--keep): {', '.join(cl.procs)}; logs in {state}/log; "
                  f"stop with: {Path(sys.argv[0]).name} --stop --state-dir {state}")
        else:
            cl.stop()
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
