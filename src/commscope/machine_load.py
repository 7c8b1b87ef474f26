"""How busy the machine was while a run measured: load average and CPU steal (Linux).

Every run's ``meta.json`` holds ``load`` (docs/run-directory.md): at the start and the end
the load average (1, 5, 15 min) and the machine's cumulative CPU ticks from
``/proc/stat``; at the end, for the time between, ``steal_pct`` (time a hypervisor gave
this machine's CPUs to others) and ``others_busy_pct``: the CPU time of the whole
machine that neither commscope nor the jobs it started used, as a share of every CPU.
A run measured on a machine others were using, or one a hypervisor stole from, times
more than the communication it studies; the report's summary says so (:func:`judge`).

The 1-minute load average alone cannot tell: it still counts the previous run of a
study a minute later. The busy share of others subtracts this process's and its
children's CPU time (``getrusage``) from the machine's busy ticks over the same wall time.
"""

import os
import time

#: Others used at least this share of the machine's CPUs while the run measured: loaded.
BUSY_PCT = 25.0
#: A hypervisor took at least this share of the CPUs' time: loaded.
STEAL_PCT = 5.0


def _cpu_ticks():
    """{"busy", "idle", "steal", "total"} ticks of all CPUs since boot, or None."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    v = [int(x) for x in fields[1:]]
    v += [0] * (8 - len(v))
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    idle = v[3] + v[4]
    steal = v[7]
    total = sum(v[:8])
    return {"busy": total - idle - steal, "idle": idle, "steal": steal, "total": total}


def _loadavg():
    try:
        with open("/proc/loadavg") as fh:
            return [float(x) for x in fh.read().split()[:3]]
    except (OSError, ValueError):
        return None


def _own_cpu_s():
    """CPU seconds of this process and its finished children (the jobs it started)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def sample():
    """One reading: load average, CPU ticks, this process tree's CPU time, the clock."""
    return {
        "load_average": _loadavg(),
        "cpu_ticks": _cpu_ticks(),
        "cpus": os.cpu_count(),
        "commscope_cpu_s": round(_own_cpu_s(), 3),
        "monotonic_s": round(time.monotonic(), 3),
        "pid": os.getpid(),
    }


def between(start, end):
    """``{"steal_pct", "others_busy_pct", "wall_s"}`` from two samples (None where unknown)."""
    out = {"steal_pct": None, "others_busy_pct": None, "wall_s": None}
    a, b = (start or {}).get("cpu_ticks"), (end or {}).get("cpu_ticks")
    if not a or not b or b["total"] <= a["total"]:
        return out
    total = b["total"] - a["total"]
    out["steal_pct"] = round(100.0 * (b["steal"] - a["steal"]) / total, 2)
    wall = (end.get("monotonic_s") or 0) - (start.get("monotonic_s") or 0)
    if start.get("pid") == end.get("pid") and wall > 0:  # one process: its CPU time is ours
        out["wall_s"] = round(wall, 3)
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        busy_s = (b["busy"] - a["busy"]) / hz
        ours = max(0.0, end["commscope_cpu_s"] - start["commscope_cpu_s"])
        cpus = end.get("cpus") or 1
        out["others_busy_pct"] = round(max(0.0, 100.0 * (busy_s - ours) / (wall * cpus)), 1)
    return out


def judge(load):
    """Why the machine was busy while a run measured (a short clause), or None.

    ``load``: the ``load`` of a run's meta.json. Judged by what others used and what was
    stolen during the run; a run without those readings (older commscope, not Linux) by
    its load average at the start beyond the CPUs it had.
    """
    if not isinstance(load, dict):
        return None
    during = load.get("during") or {}
    why = []
    busy, steal = during.get("others_busy_pct"), during.get("steal_pct")
    if isinstance(busy, (int, float)) and busy >= BUSY_PCT:
        why.append(f"other programs used {busy:.0f} % of the CPUs")
    if isinstance(steal, (int, float)) and steal >= STEAL_PCT:
        why.append(f"the hypervisor stole {steal:.0f} % of CPU time")
    if busy is None and steal is None:
        start = load.get("start") or {}
        avg, cpus = start.get("load_average"), start.get("cpus")
        if avg and cpus and avg[0] > cpus:
            why.append(f"load average {avg[0]:.1f} on {cpus} CPUs at the start")
    return "; ".join(why) or None
