"""No answer from damaged data (issue 43): the trace is checked against what the ranks
counted before any analysis (collect/completeness.py), a whole run with a gap is refused
naming the file and the rank, an unfinished one is diagnosed with the gap said and its
findings marked; compare says "damaged"; one warning voice; a what-if never changes the
diagnosis.  Real runs: tests/fuzzkit.py's originals (a traced 2-rank profile)."""

import contextlib
import io
import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from commscope import cli

pytestmark = pytest.mark.mpi

HEADER, RECORD = 64, 56


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def profile(fuzz_originals, tmp_path):
    """A fresh copy of the traced profile run (exact_threads, 2 ranks, 3 threads each)."""
    dst = tmp_path / "run"
    shutil.copytree(fuzz_originals["profile"], dst)
    return dst


def interrupted(run):
    meta = json.loads((run / "meta.json").read_text())
    meta["status"] = "interrupted"
    (run / "meta.json").write_text(json.dumps(meta))
    return run


def biggest(run):
    return max((run / "raw").glob("trace.*.bin"), key=lambda p: p.stat().st_size)


def _records(path):
    return (path.stat().st_size - HEADER) // RECORD


@pytest.mark.parametrize("damage", ["deleted", "header only", "cut at a record", "records dropped"])
def test_a_whole_run_with_a_gap_is_refused_naming_file_and_rank(profile, damage):
    victim = biggest(profile)
    data = victim.read_bytes()
    n = _records(victim)
    if damage == "deleted":
        victim.unlink()
    elif damage == "header only":
        victim.write_bytes(data[:HEADER])
    elif damage == "cut at a record":
        victim.write_bytes(data[: HEADER + RECORD * (n // 2)])
    else:
        victim.write_bytes(data[: HEADER + RECORD * 10] + data[HEADER + RECORD * 13 :])
    rank, thread = victim.name.split(".")[1:3]
    for argv in (["diagnose", profile], ["model", "matching", profile, "--json", "-t", "2"]):
        status, out, err = run_cli(*argv)
        assert status == 2, (argv, err)
        assert victim.name in err and f"rank {rank} thread {thread}" in err, err
        assert "trace_records" in err and out == ""


def test_an_interrupted_run_is_diagnosed_with_the_gap_said_and_its_findings_marked(profile):
    interrupted(profile)
    victim = biggest(profile)
    n = _records(victim)
    victim.unlink()
    rank = int(victim.name.split(".")[1])
    status, out, err = run_cli("diagnose", profile)
    assert status == 0, err
    headline = out.splitlines()[1]
    assert headline.startswith("Incomplete: the trace of") and f"{n} of its" in headline
    assert "(gap)" in out
    assert "commscope: warning:" in err and victim.name in err
    status, out, _ = run_cli("diagnose", profile, "--json")
    d = json.loads(out)
    assert rank in d["incomplete"]["ranks"] and d["incomplete"]["missing_records"] == n
    assert d["incomplete"]["gaps"][0]["file"] == f"raw/{victim.name}"
    touched = [g for g in d["groups"] if rank in g["culprit_ranks"] or rank in g["waiting_ranks"]]
    assert touched and all(g["evidence"].get("trace_gap") for g in touched)


def test_a_traced_run_whose_files_are_gone_is_not_called_untraced(profile):
    status, _, err = run_cli("diagnose", profile)
    assert status == 0
    for p in (profile / "raw").glob("trace.*.bin"):
        p.unlink()
    status, _, err = run_cli("diagnose", profile)
    assert status == 2 and "trace.0.0.bin" in err and "missing" in err
    interrupted(profile)
    status, out, err = run_cli("diagnose", profile)
    assert status == 0, err
    assert "profiled without --trace" not in out and "without an event trace" not in out
    assert "the run was traced (--trace), but its trace files are gone" in out


@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_call_sites_cut_short_in_a_whole_run_are_refused(profile, damage):
    (path,) = (profile / "raw").glob("callsites.*.jsonl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "cut" else b"x#z")
    status, _, err = run_cli("diagnose", profile)
    assert status == 2 and path.name in err and "rank" in err, err


@pytest.mark.parametrize("family", ["clocks", "cpu"])
def test_a_finalize_file_cut_in_a_whole_run_is_refused(profile, family):
    """The clock offsets and CPU times every rank appends at MPI_Finalize: a cut file
    changed the diagnosis without a word (fuzz pass, seed 44)."""
    (path,) = (profile / "raw").glob(f"{family}.*.jsonl")
    path.write_bytes(path.read_bytes()[:-30])
    status, _, err = run_cli("diagnose", profile)
    assert status == 2 and path.name in err and "cut short" in err, err


def test_a_counter_kind_emptied_is_refused(profile):
    p = profile / "counters.parquet"
    c = pd.read_parquet(p)
    c["kind"] = None
    c.to_parquet(p, index=False)
    status, _, err = run_cli("diagnose", profile)
    assert status == 2 and "counters.parquet: kind" in err, err


def test_compare_says_damaged_not_beyond_noise(fuzz_originals, profile):
    original = fuzz_originals["profile"]
    interrupted(profile)
    biggest(profile).unlink()
    status, out, err = run_cli(
        "compare", "--before", original, original, "--after", original, profile, "--json"
    )
    assert status == 0, err
    c = json.loads(out)
    assert "findings" not in c or not c["findings"]
    assert c["not_compared"]["findings"].startswith("damaged:")
    assert str(profile) in c["damaged"]
    assert "commscope: warning:" in err


def test_noise_statistics_never_overflow():
    from commscope.compare import noise

    for statistic in noise.STATISTICS:
        r = noise.change([1.0, 1.0], [1.0, 1e200], statistic=statistic)
        assert r["difference_s"] == pytest.approx(5e199)
        r = noise.change([1e200, 3e200], [2e200, 5e200], statistic=statistic)
        assert r["p_value"] is None or 0 <= r["p_value"] <= 1
    assert math.isfinite(noise._var([1e200, 3e200])) is False or noise._var([1e200, 3e200]) > 0


def test_an_absurd_counter_is_refused_with_its_name(fuzz_originals, profile):
    p = profile / "counters.parquet"
    c = pd.read_parquet(p)
    c.loc[c["counter"] == "messages_sent", "value"] = 1e200
    c.to_parquet(p, index=False)
    original = fuzz_originals["profile"]
    status, _, err = run_cli(
        "compare", "--before", original, original, "--after", original, profile
    )
    assert status == 2 and "counters.parquet: value" in err and "Traceback" not in err


def test_warnings_are_one_line_even_with_python_warnings_as_errors(profile):
    interrupted(profile)
    victim = biggest(profile)
    victim.write_bytes(victim.read_bytes()[:-20])  # the last record cut short
    for argv in (
        ["diagnose", profile],
        ["export", profile, "--format", "perfetto", "-o", profile.parent / "t.json"],
    ):
        p = subprocess.run(
            [sys.executable, "-W", "error", "-m", "commscope", *map(str, argv)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr and "Warning:" not in p.stderr
        lines = p.stderr.splitlines()
        assert lines and all(ln.startswith("commscope: warning: ") for ln in lines), lines
        assert any("last record cut short" in ln for ln in lines)


def test_a_what_if_never_changes_the_diagnosis(fuzz_originals):
    run = fuzz_originals["profile"]
    _, plain, _ = run_cli("diagnose", run, "--json")
    _, what_if, _ = run_cli("diagnose", run, "--json", "--what-if", "machine-model=bluewaters")
    a, b = json.loads(plain), json.loads(what_if)
    for key in ("findings", "groups", "efficiency", "notes"):
        assert a[key] == b[key], key
    assert a["replay"]["eager_basis"] == b["replay"]["eager_basis"]
    assert [w["change"] for w in b["replay"]["what_if"]] == ["machine-model=bluewaters"]


def test_the_sizes_that_waited_come_before_a_machine_models_eager_limit():
    from commscope.diagnose.timeline import eager_limit
    from commscope.models.machine_model import bluewaters_machine_model

    sends = pd.DataFrame({"start_s": [0.0, 0.0], "end_s": [1.0, 1.0], "bytes": [4096, 4096]})
    posts = pd.Series([0.5, 0.5]).to_numpy()  # posted later; both sends waited for it
    limit, basis = eager_limit(sends, posts, bluewaters_machine_model())
    assert limit == 4095 and basis.startswith("the trace")
    quick = pd.DataFrame({"start_s": [0.0], "end_s": [0.1], "bytes": [16384]})
    limit, basis = eager_limit(quick, pd.Series([0.5]).to_numpy(), bluewaters_machine_model())
    assert basis.startswith("the trace")  # 16 KiB returned early, above the model's 7999


def test_the_fuzz_harness_fails_a_changed_answer_without_a_warning(fuzz_originals, tmp_path):
    import fuzzkit

    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    target = tmp_path / "in" / "run"
    shutil.copytree(fuzz_originals["profile"], target)
    mutant = fuzzkit.Mutant("profile", target, "a test", (), [], answers=True)
    label = "diagnose --json"
    want = fuzzkit.reference(mutant, label, fuzz_originals)
    assert want
    same = fuzzkit.Result(0, want, "", 0.1)
    other = fuzzkit.Result(0, want.replace("small_messages", "late_sender"), "", 0.1)
    warned = fuzzkit.Result(0, other.out, "commscope: warning: x\n", 0.1)
    for result, outcome in ((same, "exit 0"), (other, "silent changed answer"), (warned, "exit 0")):
        case = fuzzkit.Case(label, mutant.what, "exit 0")
        assert fuzzkit.changed_answer(mutant, case, result, fuzz_originals).outcome == outcome, (
            result
        )


def test_thread_timings_emptied_are_refused_in_a_whole_run_and_marked_in_an_unfinished_one(
    fuzz_originals, tmp_path
):
    """threads.parquet of `profile --ompt` with no rows: diagnose and compare lost the
    thread imbalance without a word (fuzz pass, seed 44)."""
    from needs import need_ompt_runtime

    need_ompt_runtime()
    original = fuzz_originals["profile-ompt"]
    run = tmp_path / "run"
    shutil.copytree(original, run)
    samples = json.loads((run / "meta.json").read_text())["profile"]["ompt"]["samples"]
    table = run / "threads.parquet"
    pd.read_parquet(table).iloc[:0].to_parquet(table, index=False)
    what = (
        f"threads.parquet: holds 0 of the {samples} thread arrivals the OMPT tool recorded "
        "(meta.json profile.ompt.samples): the thread imbalance of every rank cannot be judged"
    )
    status, out, err = run_cli("diagnose", run)
    assert (status, out) == (2, ""), err
    assert err == (
        f"commscope: error: {run}/{what}, though every rank reached MPI_Finalize: the run is "
        "damaged\n"
    )
    status, out, err = run_cli("compare", "--before", original, "--after", run, "--json")
    assert status == 0, err
    assert json.loads(out)["damaged"] == {str(run): what}
    assert err == f"commscope: warning: {run}: {what}\n"
    interrupted(run)
    status, out, err = run_cli("diagnose", run, "--json")
    assert status == 0, err
    assert f"commscope: warning: {run}: {what}\n" in err
    d = json.loads(out)
    assert d["incomplete"]["gaps"][0]["file"] == "threads.parquet"
    assert not [g for g in d["groups"] if g["kind"] == "thread_imbalance"]
    assert d["groups"] and all(g["evidence"].get("trace_gap") for g in d["groups"])
    _, out, _ = run_cli("diagnose", run)
    assert out.splitlines()[1].startswith(
        f"Incomplete: threads.parquet holds 0 of the {samples} thread arrivals"
    )


@pytest.mark.parametrize("damage", ["renamed", "removed"])
def test_a_meta_without_the_mpi_library_version_is_refused_naming_the_field(
    fuzz_originals, profile, damage
):
    """compare's configuration line said another MPI (the name, guessed) for a meta.json
    whose mpi.library_version was renamed (fuzz pass, seed 44)."""
    path = profile / "meta.json"
    meta = json.loads(path.read_text())
    version = meta["mpi"].pop("library_version")
    if damage == "renamed":
        meta["mpi"]["library_versio"] = version
    path.write_text(json.dumps(meta))
    want = f"commscope: error: {path}: mpi.library_version: required field is missing\n"
    original = fuzz_originals["profile"]
    for argv in (["compare", "--before", original, "--after", profile], ["diagnose", profile]):
        assert run_cli(*argv) == (2, "", want)


def test_a_benchmark_parameter_renamed_is_unknown_not_another_configuration(
    fuzz_originals, tmp_path
):
    """compare said the sides differ in layout for a hvpingpong meta.json whose
    parameters.layout was renamed (fuzz pass, seed 45): a parameter one run does not
    record is unknown there (older and newer writers record other ones), said, not counted."""
    original = fuzz_originals["hvpingpong"]
    run = tmp_path / "run"
    shutil.copytree(original, run)
    path = run / "meta.json"
    meta = json.loads(path.read_text())
    meta["parameters"]["layoutx"] = meta["parameters"].pop("layout")
    path.write_text(json.dumps(meta))
    status, out, err = run_cli("compare", "--before", original, "--after", run, "--json")
    assert status == 0, err
    c = json.loads(out)
    assert c["differs"] == [] and not [n for n in c["notes"] if "differ in" in n]
    assert err.splitlines() == [
        f"commscope: warning: {path}: parameters.layout: not recorded (unknown), though "
        f"{original} records it: not compared",
        f"commscope: warning: {original}/meta.json: parameters.layoutx: not recorded "
        f"(unknown), though {run} records it: not compared",
    ]


@pytest.fixture(scope="module")
def late_sender(default_mpi, tmp_path_factory):
    """A traced profile of tests/programs/diagnose/late_sender.c (2 ranks, 4 iterations:
    rank 0 sends after its work; both then MPI_Allreduce)."""
    from diagnose_cases import CASES, compile_case

    root = tmp_path_factory.mktemp("late-sender")
    exe = compile_case(CASES["late_sender"], default_mpi, root)
    profile = ["profile", "--runs", root / "runs", "--quiet", "-n", "2", "--trace", "--callsites"]
    status, _, err = run_cli(*profile, "--", exe, "--iters", "4", "--unit", "1e-3")
    assert status == 0, err
    (run,) = (root / "runs").iterdir()
    return run


def test_a_replay_that_cannot_go_on_stops_a_whole_run_only(late_sender, tmp_path):
    """Rank 1's second MPI_Recv put before its first MPI_Allreduce (the records' contents
    swapped, their times kept): the Allreduce of rank 0 waits for rank 1's, which waits
    for a send rank 0 makes after its Allreduce.  A whole run: exit 2 naming the run, the
    file, the rank and the call; an unfinished one is diagnosed without the replay."""
    from commscope.collect.trace import CPU, RECORD

    run = tmp_path / "run"
    shutil.copytree(late_sender, run)
    path = run / "raw" / "trace.1.0.bin"
    data = path.read_bytes()
    rec = np.frombuffer(data, RECORD, offset=HEADER).copy()
    calls = np.flatnonzero(rec["event"] != CPU)  # Recv, Allreduce, Recv, Allreduce, ...
    a, b = calls[1], calls[2]
    for name in set(RECORD.names) - {"t_begin", "t_end"}:
        rec[name][[a, b]] = rec[name][[b, a]]
    path.write_bytes(data[:HEADER] + rec.tobytes())
    refusal = (
        f"{run}/raw/trace.0.0.bin: rank 0: the replay cannot go on: MPI_Allreduce at "
        "late_sender.c:39 (call 1 of rank 0, thread 0) waits for the other members of its "
        "collective, whose traces never enter it; also stuck: MPI_Recv at late_sender.c:35 "
        "(call 1 of rank 1, thread 0) (records missing or damaged)"
    )
    assert run_cli("diagnose", run) == (2, "", f"commscope: error: {refusal}\n")
    interrupted(run)
    status, out, err = run_cli("diagnose", run)
    assert status == 0, err
    said = f"commscope: warning: {refusal}; the run did not end whole: diagnosed without the "
    assert [ln for ln in err.splitlines() if "cannot go on" in ln] == [
        said + "replay (no saving predicted)"
    ]
    assert all(ln.startswith("commscope: warning: ") for ln in err.splitlines()), err
    assert out.splitlines()[1].startswith(
        f"The replay was not possible: in {run}/raw/trace.0.0.bin (rank 0), MPI_Allreduce at "
        "late_sender.c:39 (call 1 of rank 0, thread 0) waits for"
    )
    assert "replay check" not in out
    d = json.loads(run_cli("diagnose", run, "--json")[1])
    assert d["replay"] is None and d["replay_refused"].startswith(f"in {run}/raw/trace.0.0.bin")
    replayed = [f for f in d["findings"] if f["basis"].startswith("replay")]
    assert replayed and all(f["predicted_saving_s"] is None for f in replayed), d["findings"]
    status, out, err = run_cli("diagnose", run, "--what-if", "balance")
    assert (status, out) == (2, "") and err.endswith(f"commscope: error: {refusal}\n")
