"""How each rank of a profiled program ended, in words.

The counter library records it in the rank's header (native/profiler/cs_prof_end.c):
an exit with its status (with or without MPI_Finalize before it), a signal, or
MPI_Abort with its error code.  Nothing is recorded for SIGKILL or ``_exit``; for those
the launcher's own report, kept in the run's ``stderr.txt``, may name the rank and the
signal (Open MPI's prterun: "process rank 1 with PID 123 on node vm exited on signal
9"), and is used when the library has nothing.

``ranks.parquet`` holds ``ending`` (exit, signal, abort or unknown), ``ending_value``
(the status, signal number or error code) and ``ended_s`` (seconds after the rank's
MPI_Init); ``meta.json`` the same per group of ranks (``profile.ranks.endings``), culprits
first; the last line of ``commscope profile`` and the report say it in one sentence.
"""

import re
import signal

#: rank-header end_how -> the ``ending`` column
HOW = {1: "exit", 2: "signal", 3: "abort"}

#: Signals another process sends to stop a job (the launcher, after one rank failed;
#: commscope, when interrupted): a rank ended by one is a bystander, not a culprit.
STOP_SIGNALS = {signal.SIGTERM, signal.SIGKILL, signal.SIGINT, signal.SIGHUP}

#: Open MPI's prterun on a rank a signal ended (also SIGKILL, which no library sees).
_PRTE_SIGNAL = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on\s+signal (\d+)")


def signal_name(number):
    try:
        return signal.Signals(int(number)).name
    except (ValueError, TypeError):
        return f"signal {number}"


def describe(finalized, ending, code):
    """One rank's ending in words."""
    known = code is not None and code == code  # not NaN
    code = int(code) if known else None
    if ending == "abort":
        return f"called MPI_Abort with error code {code}"
    if ending == "signal":
        what = f"killed by {signal_name(code)} (signal {code})"
        return f"finalized, then {what}" if finalized else what
    if ending == "exit":
        if finalized:
            return "finalized" if code == 0 else f"finalized, then exited with status {code}"
        return f"exited with status {code} without calling MPI_Finalize"
    if finalized:
        return "finalized"
    return (
        "ended without MPI_Finalize, how was not recorded (SIGKILL, _exit, or stopped "
        "by the launcher)"
    )


def from_launcher(stderr_text):
    """{rank: signal number} of the ranks a launcher says a signal ended."""
    return {int(r): int(s) for r, s in _PRTE_SIGNAL.findall(stderr_text or "")}


def fill_from_launcher(ranks, stderr_text):
    """``ranks`` (the ranks table) with the endings the library could not record taken
    from the launcher's report."""
    said = from_launcher(stderr_text)
    if not said or "ending" not in ranks.columns:
        return ranks
    ranks = ranks.copy()
    unknown = ranks["ending"] == "unknown"
    for i in ranks.index[unknown & ranks["rank"].isin(said)]:
        ranks.at[i, "ending"] = "signal"
        ranks.at[i, "ending_value"] = float(said[int(ranks.at[i, "rank"])])
    return ranks


def _rank(row):
    """Order of blame: who ended the job first in all likelihood (0 = first)."""
    ending, code, finalized = row["ending"], row["ending_value"], row["state"] == "finalized"
    if ending == "abort":
        return 0
    if ending == "signal" and int(code) not in STOP_SIGNALS and not finalized:
        return 1
    if ending == "exit" and not finalized and code != 0:
        return 2
    if ending == "exit" and not finalized:
        return 3
    if ending == "signal" and not finalized:
        return 4
    if not finalized:
        return 5
    return 6 if (ending == "exit" and code != 0) or ending == "signal" else 7


def summarize(ranks):
    """The ranks grouped by how they ended, culprits first: a list of {ranks, ending,
    code, finalized, text}; ranks that finalized and exited 0 are left out."""
    if ranks is None or not len(ranks) or "ending" not in ranks.columns:
        return []
    groups = {}
    for row in ranks.to_dict("records"):
        finalized = row["state"] == "finalized"
        code = row["ending_value"]
        code = int(code) if code == code and code is not None else None
        text = describe(finalized, row["ending"], code)
        if text == "finalized":
            continue
        key = (_rank({**row, "ending_value": code if code is not None else -1}), text)
        g = groups.setdefault(
            key,
            {
                "ranks": [],
                "ending": row["ending"],
                "code": code,
                "finalized": finalized,
                "text": text,
            },
        )
        g["ranks"].append(int(row["rank"]))
    return [dict(g, ranks=sorted(g["ranks"])) for _, g in sorted(groups.items())]


def rank_list(ranks, limit=8):
    shown = ", ".join(map(str, ranks[:limit]))
    more = f" and {len(ranks) - limit} more" if len(ranks) > limit else ""
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}{more}"


def sentence(endings, limit=3):
    """``rank 1 killed by SIGSEGV (signal 11); rank 0 killed by SIGTERM (signal 15)``."""
    parts = [f"{rank_list(g['ranks'])} {g['text']}" for g in endings[:limit]]
    if len(endings) > limit:
        parts.append(
            f"{sum(len(g['ranks']) for g in endings[limit:])} more ranks ended "
            "otherwise (ranks.parquet)"
        )
    return "; ".join(parts)
