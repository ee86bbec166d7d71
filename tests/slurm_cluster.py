"""A one-node SLURM cluster on this machine, for `make test-cluster` (tests/test_cluster.py).

Everything lives under one directory (by default work/slurm of the checkout): a generated munge key,
slurm.conf (controller and node on 127.0.0.1, the machine's real CPU count and memory from `slurmd -C`,
ports picked free at start; two GPUs as generic resources whose device files are /dev/null and /dev/zero, so job scripts that ask for
`--gres=gpu:1` are scheduled as on a GPU cluster while the tests run on CPU), state, spool and logs. munged, slurmctld and slurmd run in the foreground
as children of this process, so `stop()` ends exactly them (after cancelling every job), and nothing is
left running. Commands reach this cluster through SLURM_CONF (``env()``); the system's own SLURM
configuration, if any, is never read or touched. Needs root (slurmd) and the Debian packages slurm-wlm
and munge (`make test-cluster` installs them when missing).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from .processes import stop

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "squeue", "scancel")


def missing_programs() -> list[str]:
    return [name for name in DAEMONS if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line() -> str:
    """`slurmd -C`'s NodeName line: this machine's CPUs, sockets, cores and memory as SLURM sees them."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    return next(line for line in out.splitlines() if line.startswith("NodeName="))


CONF = """\
ClusterName=cqtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
GresTypes=gpu
{node} Gres=gpu:2 NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class LocalSlurm:
    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.procs: list[subprocess.Popen] = []
        self.conf = self.root / "slurm.conf"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), capture_output=True, text=True, env=kw.pop("env", self.env()),
                              check=check, **kw)

    def _write_config(self) -> None:
        node = _node_line()
        self.host = node.split()[0].split("=", 1)[1]
        if self.root.exists():
            shutil.rmtree(self.root)
        for sub in ("munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True)
        os.chmod(self.root / "munge", 0o700)
        (self.root / "gres.conf").write_text(  # SLURM counts a GPU by its device file; a stand-in for each
            f"AutoDetect=off\nNodeName={self.host} Name=gpu File=/dev/null\nNodeName={self.host} Name=gpu File=/dev/zero\n")
        self.conf.write_text(CONF.format(host=self.host, root=self.root, node=node, ctld_port=_free_port(),
                                         slurmd_port=_free_port()))
        subprocess.run(["mungekey", "--create", "--keyfile", str(self.root / "munge" / "munge.key")],
                       check=True, capture_output=True)

    def _daemon(self, *cmd: str) -> None:
        log = open(self.root / "log" / f"{Path(cmd[0]).name}.out", "ab")
        self.procs.append(subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT, env=self.env(),
                                           start_new_session=True))

    def start(self, timeout: float = 60) -> None:
        self._write_config()
        m = self.root / "munge"
        self._daemon("munged", "--foreground", "--force", f"--socket={m}/munge.socket", f"--key-file={m}/munge.key",
                     f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed")
        self._wait(lambda: (m / "munge.socket").exists(), timeout, "munged did not start")
        self._daemon("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._wait(lambda: self.run("scontrol", "ping", check=False).returncode == 0, timeout, "slurmctld did not answer")
        self._daemon("slurmd", "-D", "-f", str(self.conf), "-N", self.host)
        self._wait(self._node_idle, timeout, "the node did not come up idle")

    def _node_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%T", check=False).stdout.strip()
        return out.startswith("idle")

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            dead = [p.args[0] for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead[0]} exited: see {self.root}/log")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} within {timeout:.0f} s: see {self.root}/log")

    def stop(self) -> list[str]:
        """Cancel every job, then end slurmd, slurmctld and munged (in that order). Returns the ids of
        any daemon that had to be killed, for the caller to report."""
        if self.procs:
            self.run("scancel", "--full", "--quiet", "-u", "root", check=False)
            deadline = time.time() + 30
            while time.time() < deadline and self.run("squeue", "-h", check=False).stdout.strip():
                time.sleep(0.5)
        killed = []
        for proc in reversed(self.procs):
            if stop(proc, 20):
                killed.append(f"{proc.args[0]} ({proc.pid})")
        self.procs.clear()
        return killed


def sbatch_wait(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """Submit a job script with `sbatch --wait` (it returns once every task has ended). stdout names the job
    ("job N"); stderr holds sbatch's and then every task's log (slurm-N_I.out), for the caller's message."""
    cwd = Path(cwd)
    path = cwd / f"job.{len(list(cwd.glob('job.*.sh')))}.sh"
    path.write_text(script)
    proc = subprocess.run(["sbatch", "--parsable", "--wait", path.name], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=900)
    job = proc.stdout.strip().split(";")[0]
    logs = "".join(f"--- {log.name}:\n{log.read_text()}" for log in sorted(cwd.glob(f"slurm-{job}_*.out")))
    return subprocess.CompletedProcess(proc.args, proc.returncode, f"job {job}\n", proc.stderr + logs)
