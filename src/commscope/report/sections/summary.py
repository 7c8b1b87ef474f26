"""The answer first: this machine's communication in one box, at the top of a study report.

What a person who runs OSU's benchmarks comes for, each number in human units with its
uncertainty and a link to the section that shows it: the one-way latency and peak
bandwidth per locality (osu_latency, osu_bw), the fitted latency and bandwidth per
protocol, where the MPI switches protocol (eager / rendezvous), the injection limit of
concurrent pairs, the message rate, the cost of searching a matching queue, and whether
early-bird partitioned sends pay off here and from which size.

Above it, a banner when the machine was busy while measuring (other programs using the
CPUs, CPU steal: ``meta.json``'s ``load``, :mod:`commscope.machine_load`) or a run had
more ranks x threads than cores, naming the rows those runs measured.

Shown when the report holds ping-pong runs (the machine's characterisation); a report of
a profile alone opens with its diagnosis instead.
"""

import html
import math

from ...machine_load import judge
from ...units import format_bytes, format_percent, format_rate, format_seconds
from . import more, report_machine_model
from ...lazy import lazy

np = lazy("numpy")

KINDS = {
    "pingpong",
    "hvpingpong",
    "mtmatch",
    "multirate",
    "threads",
    "partitioned",
    "progress",
    "bsp",
    "profile",
}
TITLE = "Summary: this machine's communication"
ORDER = 0
PROTOCOLS = ("short", "eager", "rendezvous")


def busy_runs(runs):
    """``{run name: why}`` of the runs measured on a busy machine or oversubscribed."""
    out = {}
    for run in runs:
        why = []
        load = judge(run.meta.get("load"))
        if load:
            why.append(load)
        launch = run.meta.get("launch") or {}
        if launch.get("oversubscribed"):
            threads = launch.get("threads_per_rank") or 1
            why.append(
                f"oversubscribed: {launch.get('nranks', '?')} ranks"
                + (f" x {threads} threads" if threads > 1 else "")
                + " on fewer cores"
            )
        if why:
            out[run.path.name] = "; ".join(why)
    return out


def load_banner(runs):
    """The banner of a report without a summary box (a profile alone): which runs were
    measured on a busy machine or oversubscribed, or "" when none."""
    busy = busy_runs(runs)
    if not busy:
        return ""
    return (
        f"<div class='warn banner'><p>&#9888; {_busy_sentence(busy, runs)}: times include "
        "waiting for a CPU.</p>" + _which_runs(busy) + "</div>"
    )


def _busy_sentence(busy, runs):
    """'The machine was busy while measuring: other programs used 68 .. 81 % of the CPUs
    during all 22 runs; 10 runs had more ranks x threads than cores (oversubscribed)'."""
    loaded = {n: w for n, w in busy.items() if not w.startswith("oversubscribed")}
    over = sorted(n for n, w in busy.items() if "oversubscribed" in w)
    said = []
    if loaded:
        clauses = [w.split(";")[0] for w in loaded.values()]
        runs_text = (
            "the run"
            if len(runs) == 1
            else f"all {len(runs)} runs"
            if len(loaded) == len(runs)
            else f"{len(loaded)} of {len(runs)} runs"
        )
        said.append(
            f"<b>The machine was busy while measuring</b>: "
            f"{html.escape(_range_of(clauses))} during {runs_text}"
        )
    if over:
        said.append(
            ("it" if len(runs) == 1 else f"{len(over)} run{'s' * (len(over) != 1)}")
            + " had more ranks x threads than cores (oversubscribed)"
        )
    return "; ".join(said)


def _which_runs(busy):
    detail = "".join(
        f"<li>{html.escape(n)}: {html.escape(w)}</li>" for n, w in sorted(busy.items())
    )
    return more("which runs, and why", f"<ul>{detail}</ul>")


def load_text(run):
    """A run's machine load for its metadata table: 'other programs used 73 % of the CPUs,
    CPU steal 0.6 %; load average 6.2 at the start', or "" when not recorded."""
    load = run.meta.get("load")
    if not isinstance(load, dict):
        return ""
    during = load.get("during") or {}
    parts = []
    if isinstance(during.get("others_busy_pct"), (int, float)):
        parts.append(f"other programs used {during['others_busy_pct']:.0f} % of the CPUs")
    if isinstance(during.get("steal_pct"), (int, float)):
        parts.append(f"CPU steal {during['steal_pct']:.1f} %")
    avg = (load.get("start") or {}).get("load_average")
    if avg:
        parts.append(
            f"load average {avg[0]:.1f} at the start"
            + (f" on {load['start']['cpus']} CPUs" if load["start"].get("cpus") else "")
        )
    return "; ".join(parts)


class _Row:
    def __init__(self, what, value, spread="", sources=(), link="", note="", headline=""):
        self.what, self.value, self.spread = what, value, spread
        self.sources, self.link, self.note = list(sources), link, note
        self.headline = headline  # the words of the box's first line, if any


#: The groups of the summary table, in order: (title, the row makers of each).
GROUPS = (
    "Latency and bandwidth, measured (osu_latency, osu_bw)",
    "Per protocol, fitted: one-way time = latency + size / bandwidth",
    "Message rate",
    "Matching",
    "Early-bird partitioned sends",
    "Progress: does data move while the ranks compute? (bench progress)",
)


def render(runs, context):
    all_runs = context.get("all_runs") or runs
    pingpong = [r for r in all_runs if r.kind == "pingpong"]
    if not pingpong:
        return ""
    machine_model, where = report_machine_model(context)
    groups = []
    for title, make in zip(
        GROUPS,
        (
            _measured_rows,
            lambda rs, mm: _model_rows(mm, rs),
            _rate_rows,
            _queue_rows,
            _partitioned_rows,
            _progress_rows,
        ),
    ):
        try:
            rows = make(all_runs, machine_model)
        except Exception as exc:  # one missing piece must not take the summary with it
            rows = [_Row("could not be computed", "-", html.escape(str(exc)[:200]))]
        if rows:
            groups.append((title, rows))
    rows = [r for _, g in groups for r in g]
    busy = busy_runs(all_runs)
    return (
        _headline(rows)
        + _banner(rows, busy, all_runs)
        + _table(groups, busy)
        + _footer(where, all_runs)
    )


def _headline(rows):
    words = [r.headline for r in rows if r.headline]
    if not words:
        return ""
    return (
        "<div class='answer'><p class='headline'>" + html.escape("; ".join(words)) + ".</p></div>"
    )


def _banner(rows, busy, runs):
    if not busy:
        return ""
    affected = list(dict.fromkeys(r.what for r in rows if set(r.sources) & set(busy)))
    if not affected:
        return (
            f"<div class='warn banner'><p>&#9888; {_busy_sentence(busy, runs)}; no row "
            "below comes from those runs.</p>" + _which_runs(busy) + "</div>"
        )
    which = (
        "every row below"
        if len(affected) == len(rows)
        else "the rows marked &#9888;: " + html.escape("; ".join(affected))
    )
    return (
        f"<div class='warn banner'><p>&#9888; {_busy_sentence(busy, runs)}. This affects "
        f"{which}: times include waiting for a CPU, so they are upper bounds, and a model "
        "may seem not to hold because of it. Measure again on an idle machine.</p>"
        + _which_runs(busy)
        + "</div>"
    )


def _range_of(clauses):
    """'other programs used 68 .. 81 % of the CPUs' from one clause per run."""
    import re

    nums = [float(m.group(1)) for c in clauses for m in [re.search(r"used (\d+) %", c)] if m]
    if nums and len(nums) == len(clauses):
        lo, hi = min(nums), max(nums)
        span = f"{lo:.0f} %" if lo == hi else f"{lo:.0f} .. {hi:.0f} %"
        return f"other programs used {span} of the CPUs"
    return "; ".join(dict.fromkeys(clauses))


def _table(groups, busy):
    e = html.escape
    out = [
        "<table class='summary'><colgroup><col class='what'><col class='value'>"
        "<col class='spread'><col class='src'></colgroup>"
        "<tr><th class='l'>what</th><th>value</th>"
        "<th class='l'>uncertainty</th><th class='l'>measured by</th></tr>"
    ]
    for title, rows in groups:
        out.append(f"<tr class='group'><th class='l' colspan='4'>{e(title)}</th></tr>")
        for r in rows:
            flag = (
                " <span class='flag' title='measured while the machine was busy or "
                "oversubscribed'>&#9888;</span>"
                if set(r.sources) & set(busy)
                else ""
            )
            src = e(", ".join(r.sources)) or "-"
            if r.link:
                src = f"<a href='#{r.link}'>{src}</a>"
            note = f"<br><span class='note'>{e(r.note)}</span>" if r.note else ""
            out.append(
                f"<tr><td class='l'>{e(r.what)}{flag}</td><td class='l'>{e(r.value)}</td>"
                f"<td class='l'>{e(r.spread) or '-'}{note}</td><td class='l'>{src}</td></tr>"
            )
    out.append("</table>")
    return "".join(out)


def _footer(where, runs):
    return (
        f"<p class='note'>Latency and peak bandwidth: the measured ping-pong (median of the "
        f"repetitions, 10th .. 90th percentile). Per protocol: the fitted parameters "
        f"({html.escape(where)}), with 95 % bootstrap intervals. Sections below show how each "
        f'number was measured; "Do the models hold here?" how far the models go.</p>'
    )


# -- rows ------------------------------------------------------------------------------


def _single_pair(runs):
    return [
        r
        for r in runs
        if r.kind == "pingpong" and int(r.meta.get("parameters", {}).get("pairs", 1)) == 1
    ]


def _measured_rows(runs, machine_model):
    """osu_latency and osu_bw: the smallest size's one-way time and the best bandwidth."""
    import pandas as pd

    runs = _single_pair(runs)
    if not runs:
        return []
    frames = [r.table("samples").assign(run=r.path.name) for r in runs]
    df = pd.concat(frames, ignore_index=True)
    rows = []
    for loc, sub in df.groupby("locality"):
        g = sub.groupby("size_bytes")["time_s"]
        med, p10, p90 = g.median(), g.quantile(0.1), g.quantile(0.9)
        s0 = int(med.index.min())
        names = sorted(set(sub["run"]))
        rows.append(
            _Row(
                f"latency, {format_bytes(s0)} one-way, {loc}",
                format_seconds(med[s0]),
                f"{format_seconds(p10[s0])} .. {format_seconds(p90[s0])}",
                names,
                "pingpong",
                headline=f"{loc}: {format_seconds(med[s0])} latency",
            )
        )
        bw = med.index.to_numpy(float) / med.to_numpy()
        i = int(np.nanargmax(bw))
        s = int(med.index[i])
        rows.append(
            _Row(
                f"peak bandwidth, {loc} (size / one-way time)",
                format_rate(bw[i], "B/s"),
                f"{format_rate(s / p90[s], 'B/s')} .. {format_rate(s / p10[s], 'B/s')}",
                names,
                "pingpong",
                note=f"at {format_bytes(s)} messages",
                headline=f"{format_rate(bw[i], 'B/s')} peak bandwidth",
            )
        )
    return rows


def _span(bp, proto):
    short_max = bp.short_max_bytes if bp else None
    eager_max = bp.eager_max_bytes if bp else None
    if proto == "short":
        return f"up to {format_bytes(short_max)}" if short_max else ""
    if proto == "eager":
        lo = f"above {format_bytes(short_max)}" if short_max else ""
        hi = f"up to {format_bytes(eager_max)}" if eager_max else ""
        return ", ".join(x for x in (lo, hi) if x)
    top = eager_max if eager_max is not None else short_max
    return f"above {format_bytes(top)}" if top else ""


def _interval(ci, write):
    if not ci or any(v is None or not math.isfinite(v) for v in ci):
        return ""
    return f"{write(ci[0])} .. {write(ci[1])} (95 %)"


def _sources(machine_model, term):
    return [
        p["path"].rstrip("/").rsplit("/", 1)[-1]
        for p in (machine_model.machine.get("term_sources") or {}).get(term, [])
    ]


def _model_rows(machine_model, runs=()):
    if machine_model is None:
        return []
    measured = _measured_sizes(runs)
    rows = []
    src = _sources(machine_model, "postal/max-rate")
    single = [s for s in src if "pair" not in s or "1pair" in s] or src
    for loc in machine_model.localities if hasattr(machine_model, "localities") else []:
        bp = machine_model.breakpoints.get(loc)
        for proto in PROTOCOLS:
            p = machine_model.params.get((proto, loc))
            if p is None:
                continue
            span = _span(bp, proto)
            fit = p.fit
            ci = fit.ci95 if fit else {}
            flags = "; ".join(fit.flags) if fit and fit.flags else ""
            what = f"{proto} protocol ({span}), {loc}" if span else f"{proto} protocol, {loc}"
            a_ci = ci.get("alpha_s")
            notes = [f"fit flagged: {flags}"] if flags else []
            if p.capacity_bytes:
                beyond = (
                    format_rate(1 / p.beta_beyond_s_per_byte, "B/s")
                    if p.beta_beyond_s_per_byte and p.beta_beyond_s_per_byte > 0
                    else "?"
                )
                notes.append(
                    f"above {format_bytes(p.capacity_bytes)}: {beyond} (the buffers "
                    "leave the caches)"
                )
            bandwidth = format_rate(p.Rb_Bps, "B/s")
            bw_ci = _interval(ci.get("Rb_Bps"), lambda v: format_rate(v, "B/s"))
            if p.alpha_s == 0 or (a_ci and a_ci[1] == 0):  # a degenerate fit, said in words
                value = f"latency not resolved; {bandwidth}"
                spread = (
                    "latency: the fit puts the whole time on the size term (too small to "
                    f"measure at these sizes); bandwidth {bw_ci}"
                )
            else:
                value = f"{format_seconds(p.alpha_s)} + size / {bandwidth}"
                spread = f"latency {_interval(a_ci, format_seconds)}; bandwidth {bw_ci}"
            rows.append(_Row(what, value, spread, single, "machine_model", note="; ".join(notes)))
        if bp is not None:
            rows.append(
                _Row(
                    f"protocol switches, {loc}",
                    _switch_text(bp),
                    _switch_spread(bp, measured.get(loc, [])),
                    single,
                    "machine_model",
                    note=_limits_text(machine_model),
                    headline=(
                        f"rendezvous above {format_bytes(bp.eager_max_bytes)}"
                        if bp.eager_max_bytes
                        else ""
                    ),
                )
            )
        rdv = machine_model.params.get(("rendezvous", loc))
        if rdv is not None and math.isfinite(rdv.R_N_Bps or math.inf):
            multi = [s for s in src if s not in single] or src
            rows.append(
                _Row(
                    f"injection limit R_N of concurrent pairs, {loc}",
                    format_rate(rdv.R_N_Bps, "B/s"),
                    _interval(
                        (rdv.fit.ci95 if rdv.fit else {}).get("R_N_Bps"),
                        lambda v: format_rate(v, "B/s"),
                    ),
                    multi,
                    "machine_model",
                )
            )
    return rows


def _measured_sizes(runs):
    """{locality: the sizes the single-pair ping-pong runs measured}."""
    out = {}
    for run in _single_pair(runs):
        try:
            df = run.table("samples")
        except Exception:  # a damaged run: its sizes are not known
            continue
        for loc, sub in df.groupby("locality"):
            out.setdefault(loc, set()).update(int(v) for v in sub["size_bytes"].unique())
    return {k: sorted(v) for k, v in out.items()}


def _switch_spread(bp, sizes):
    """Where each switch lies between the sizes measured: 'after 4 KiB, by 8 KiB'."""
    parts = []
    for name, b in (
        ("short to eager", bp.short_max_bytes),
        ("eager to rendezvous", bp.eager_max_bytes),
    ):
        if not b:
            continue
        nxt = next((s for s in sizes if s > b), None)
        parts.append(
            f"{name}: between {format_bytes(b)} and {format_bytes(nxt)}"
            if nxt
            else f"{name}: above {format_bytes(b)}"
        )
    return "; ".join(parts) or "-"


def _switch_text(bp):
    parts = []
    if bp.short_max_bytes:
        parts.append(f"short to eager above {format_bytes(bp.short_max_bytes)}")
    if bp.eager_max_bytes:
        parts.append(f"eager to rendezvous above {format_bytes(bp.eager_max_bytes)}")
    return "; ".join(parts) or "none found"


def _limits_text(machine_model):
    limits = machine_model.mpi_eager_limits or {}
    if not limits:
        return "the MPI reports no eager limit through MPI_T"
    shown = sorted(limits.items(), key=lambda kv: kv[1])
    return "limits the MPI reports (MPI_T): " + ", ".join(
        f"{k.replace('_eager_limit', '').replace('btl_', '')} {format_bytes(v)}" for k, v in shown
    )


def _rate_rows(runs, machine_model):
    from ...bench.multirate import config_summary

    rows = []
    for run in (r for r in runs if r.kind == "multirate"):
        s = config_summary(run.table("reps"))
        one = s[(s["threads"] == 1)]
        for _, r in one.sort_values("mode").iterrows():
            rows.append(
                _Row(
                    f"message rate, one thread pair ({r['mode']} communicator), "
                    f"{format_bytes(run.meta['parameters'].get('size_bytes', 0))} messages",
                    format_rate(r["rate_msgs_per_s"], "msgs/s"),
                    f"{format_rate(r['rate_min_msgs_per_s'], 'msgs/s')} .. "
                    f"{format_rate(r['rate_max_msgs_per_s'], 'msgs/s')} "
                    f"(slowest .. fastest of {int(r['reps'])})",
                    [run.path.name],
                    "multirate",
                    headline=""
                    if rows
                    else f"{format_rate(r['rate_msgs_per_s'], 'msgs/s')} per thread pair",
                )
            )
        top = s[s["threads"] == s["threads"].max()]
        if len(top) == 2 and int(top["threads"].iloc[0]) > 1:
            by = top.set_index("mode")["rate_per_thread_msgs_per_s"]
            if {"shared", "per-thread"} <= set(by.index) and by["per-thread"] > 0:
                n = int(top["threads"].iloc[0])
                rows.append(
                    _Row(
                        f"rate per thread, {n} thread pairs: one shared communicator vs one each",
                        f"{by['shared'] / by['per-thread']:.2f}x",
                        f"shared {format_rate(by['shared'], 'msgs/s')}, one each "
                        f"{format_rate(by['per-thread'], 'msgs/s')}",
                        [run.path.name],
                        "multirate",
                        note="oversubscribed" if top["oversubscribed"].any() else "",
                    )
                )
    return rows


def _queue_rows(runs, machine_model):
    if machine_model is None or machine_model.gamma_s is None:
        return []
    ci = machine_model.machine.get("gamma_ci95_s")
    note = ""
    qs = machine_model.queue_search
    if qs is not None and "reversed" in qs.orders:
        o = qs.order_dict("reversed")
        p = o["params"]
        if o["form"] == "piecewise" and o.get("breakpoint_messages"):
            note = (
                f"reversed receives: {format_seconds(p['gamma1_s'])} per entry up to "
                f"{o['breakpoint_messages']:.0f} deep, {format_seconds(p['gamma2_s'])} beyond "
                "(the queue leaves the cache)"
            )
    return [
        _Row(
            "queue search, per entry walked (gamma)",
            format_seconds(machine_model.gamma_s),
            _interval(ci, format_seconds),
            _sources(machine_model, "gamma"),
            "hvpingpong",
            note=note,
            headline=f"queue search {format_seconds(machine_model.gamma_s)} per entry",
        )
    ]


#: How the summary names a compute kind (commscope.predict.earlybird_progress).
WHEN = {"blocked": "when the threads block", "busy": "with busy threads"}


def _partitioned_rows(runs, machine_model):
    """Per measured partitioned run (sleeping threads: blocked; spinning: busy), whether
    early-bird sends paid off and from which size; one headline naming each condition. A
    compute kind no run measured takes the progress probe's word for it
    (:func:`commscope.predict.earlybird_progress.expect`)."""
    from ...predict.earlybird_progress import compute_kind

    rows, said, partitions = [], {}, []
    for run in (
        r
        for r in runs
        if r.kind == "partitioned" and not r.meta.get("parameters", {}).get("calibration")
    ):
        kind = compute_kind(run.meta.get("parameters", {}).get("compute_mode", "sleep"))
        row, value, sizes = _partitioned_row(run, kind, machine_model)
        rows.append(row)
        partitions += sizes
        said.setdefault(kind, value)
    if not rows:
        return rows
    for kind in (k for k in WHEN if k not in said):
        expected = _probe_says(partitions, kind, machine_model)
        if expected:
            said[kind] = expected
    no, yes = "do not pay off", "pay off "
    words = [
        f"not {WHEN[k]}{v[len(no) :]}"
        if i and v.startswith(no)
        else f"{v[len(yes) :] if i and v.startswith(yes) else v} {WHEN[k]}"
        for i, (k, v) in enumerate(said.items())
    ]
    rows[-1].headline = "early-bird partitioned sends " + ", ".join(words)
    return rows


def _partitioned_row(run, kind, machine_model):
    from ...models.progress import library_of
    from ...predict.earlybird_progress import expect
    from ...predict.partitioned import comparison_table, measured_rows

    t = comparison_table(measured_rows(run)).sort_values("size_bytes")
    method = "partitioned" if t["measured_partitioned_s"].notna().any() else "isend"
    verdict = t["measured_verdict"].tolist()
    sizes = t["size_bytes"].tolist()
    wins = [v == "early-bird" for v in verdict]
    loses = [v == "single" for v in verdict]
    what = (
        "early-bird partitioned sends (MPI_Psend) vs one send after the threads join"
        if method == "partitioned"
        else "early-bird sends (one Isend per partition) vs one send after the threads join"
    ) + f", {kind} threads ({run.meta.get('parameters', {}).get('compute_mode', 'sleep')})"
    start = next(
        (i for i in range(len(sizes)) if all(not x for x in loses[i:]) and any(wins[i:])), None
    )
    if start is not None:
        value = f"pay off from {format_bytes(sizes[start])}"
    elif any(wins):
        value = "pay off only at " + ", ".join(format_bytes(s) for s, w in zip(sizes, wins) if w)
    else:
        value = "do not pay off"
    ties = sum(v == "tie" for v in verdict)
    spread = (
        f"{sum(wins)} of {len(sizes)} sizes faster beyond noise, {sum(loses)} slower, "
        f"{ties} within noise (2 standard errors)"
    )
    last = t.iloc[-1]
    meas, single = last[f"measured_{method}_s"], last["measured_single_s"]
    threads = int(run.meta.get("parameters", {}).get("threads") or 1)
    notes = []
    if np.isfinite(meas) and np.isfinite(single) and single > 0:
        size = last["size_bytes"]
        notes.append(
            f"at {format_bytes(size)}: {format_seconds(meas)} instead of "
            f"{format_seconds(single)} ({format_percent(meas / single - 1)})"
        )
        # what the probe says of the measured saving (the receiver polls: MPI calls)
        mpi = library_of(run) or None
        e = expect(machine_model, size / threads, kind, single - meas, mpi, True, size)
        notes.append(e.condition)
    row = _Row(what, value, spread, [run.path.name], "partitioned", note="; ".join(notes))
    return row, value, [(s / threads, s) for s in sizes]


def _probe_says(partitions, kind, machine_model):
    """The probe's word on a compute kind no run measured: "do not pay off" where no
    partition of the measured runs' sizes ((partition, buffer) bytes) can move early,
    else None."""
    from ...predict.earlybird_progress import NOT_PROBED, expect

    got = [expect(machine_model, p, kind, 1.0, None, True, m) for p, m in partitions]
    if got and all(e.regime != NOT_PROBED and e.saving_s <= 0 for e in got):
        return "do not pay off (the progress probe: " + got[-1].regime + ")"
    return None


def _progress_rows(runs, machine_model):
    """The progress probe's answers per run: rendezvous while the receiver computes, and
    partition by partition (models/progress.py, from the run's own verdicts)."""
    from ...bench.progress import case_notes, overlap_rows
    from ...models.progress import entry_key, library_of, progress_lines, section_entry

    rows = []
    for run in (r for r in runs if r.kind == "progress"):
        supported = {c: s == "run" for c, (s, _) in case_notes(run).items()}
        env = run.meta.get("progress_env") or {}
        key = entry_key(library_of(run), env)
        model = {"progress": {key: section_entry(overlap_rows(run).to_dict("records"), supported)}}
        for line in progress_lines(model):
            at, _, said = line.partition(": ")
            question, _, answer = said.rpartition(": ")
            rows.append(
                _Row(
                    f"{question} ({at}, {run.meta.get('mpi', {}).get('name', '?')}"
                    + (", " + ", ".join(f"{k}={v}" for k, v in sorted(env.items())) if env else "")
                    + ")",
                    answer,
                    "no MPI call on either rank during T; medians of "
                    f"{run.meta['parameters'].get('reps', '?')} repetitions",
                    [run.path.name],
                    "progress",
                )
            )
    return rows
