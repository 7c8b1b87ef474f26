"""Call sites of a profile run (``commscope profile --callsites``): the return addresses
the ranks recorded, resolved once after the run to file, line and enclosing function.

Raw input: ``raw/callsites.<node>.jsonl``, one line per rank (native/profiler/
cs_prof_sites.c): its sites (MPI function, calls, bytes, ticks, return addresses from
the immediate caller up) and the loaded objects that hold them (path, load bias,
GNU build id read from memory, size, mtime, executable segments).

Resolution uses pyelftools (pure Python, a wheel from PyPI: no root, no compiler, no
system elfutils), reading each object once however many ranks loaded it: an
address is first made relative to its object (PIE programs and shared libraries load
anywhere), then looked up at ``address - 1`` (a return address points after the call,
which may already be the next line) in the DWARF line table and the DIE tree
(subprograms and inlined subroutines: the innermost is the caller), else in the
symbol table (``function+0x1c``, a program built without -g).  A row never names a
wrong line: an object that is gone, whose build id (or, without one, size and mtime)
no longer matches the run, or that has neither debug information nor symbols, gives
``caller`` "unknown" and the reason.

Python (mpi4py): a call made from mpi4py's compiled module is recorded at the first
Python frame outside mpi4py (cs_prof_sites.c); the record's ``python_sites`` list
([id, file, line, function]) names it and the site's address is that id (below
``PY_SITE_MAX``), in the trace's records too.  Its row has the script as file and
object, the line as offset.

Table ``callsites``: rank, function (the MPI function), file, line, caller (the
function containing the call), object, offset (the return address in the object),
depth (frames recorded), stack (the callers above, "f (file:line) <- g (file:line)",
with --callsite-depth > 1), calls, bytes, time_s (NaN without the timers), reason
(why file/line/caller are missing or partial; empty when resolved).
"""

import bisect
import json
import os
from functools import lru_cache
from pathlib import Path

from ..errors import InputError
from ..lazy import lazy

np = lazy("numpy")
pd = lazy("pandas")

UNKNOWN = "unknown"
COLUMNS = [
    "rank",
    "function",
    "file",
    "line",
    "caller",
    "object",
    "offset",
    "depth",
    "stack",
    "calls",
    "bytes",
    "time_s",
    "reason",
]


def callsite_files(raw_dir):
    return sorted(Path(raw_dir).glob("callsites.*.jsonl"))


def read_records(path):
    """The rank records of one node file; a half-written last line (a rank killed
    while writing) is dropped; anything else malformed is an InputError."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        lines.pop()  # no newline: cut short
    out = []
    for i, line in enumerate(lines, 1):
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InputError(path, f"line {i}", f"not a JSON record ({exc})") from None
        if not isinstance(rec, dict):
            raise InputError(path, f"line {i}", "not a JSON object")
        for key in ("rank", "sites", "objects"):
            if key not in rec:
                raise InputError(path, f"line {i}: {key}", "required field is missing")
        if not _whole(rec["rank"]):
            raise InputError(path, f"line {i}: rank", f"expected a rank, got {rec['rank']!r}")
        if not isinstance(rec["sites"], list) or not all(
            isinstance(s, list)
            and len(s) >= 5
            and isinstance(s[0], str)
            and all(_whole(v) for v in s[1:])
            for s in rec["sites"]
        ):
            raise InputError(
                path,
                f"line {i}: sites",
                "expected [function, calls, bytes, ticks, address, ...] lists",
            )
        py = rec.get("python_sites", [])
        if not isinstance(py, list) or not all(
            isinstance(p, list)
            and len(p) == 4
            and _whole(p[0])
            and isinstance(p[1], str)
            and isinstance(p[2], int)
            and not isinstance(p[2], bool)
            and isinstance(p[3], str)
            for p in py
        ):
            raise InputError(
                path, f"line {i}: python_sites", "expected [id, file, line, function] lists"
            )
        if not isinstance(rec["objects"], list) or not all(_object_ok(o) for o in rec["objects"]):
            raise InputError(
                path,
                f"line {i}: objects",
                "expected {path, base, segments: [[low, high], ...], ...} objects",
            )
        out.append(rec)
    return out


def _whole(v):
    """A count or an address as JSON gives it: a whole number >= 0 (not a boolean)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def _object_ok(o):
    return (
        isinstance(o, dict)
        and isinstance(o.get("path"), str)
        and _whole(o.get("base", 0))
        and isinstance(o.get("build_id"), (str, type(None)))
        and all(_whole(o[k]) for k in ("size", "mtime_ns") if k in o)
        and isinstance(o.get("segments"), list)
        and all(
            isinstance(g, list) and len(g) == 2 and _whole(g[0]) and _whole(g[1])
            for g in o["segments"]
        )
    )


# ---- one ELF object ------------------------------------------------------------


def _build_id(elf):
    for sec in elf.iter_sections():
        if sec.header["sh_type"] == "SHT_NOTE":
            for note in sec.iter_notes():
                if note["n_type"] == "NT_GNU_BUILD_ID":
                    return note["n_desc"]
    return None


class ElfObject:
    """What one file on disk can say about addresses in it (``problem``: why nothing)."""

    def __init__(self, path, build_id, size, mtime_ns):
        self.path, self.problem, self.partial = path, None, None
        self.funcs, self._memo, self._files = [], {}, []
        self._cu_index, self._aranges, self._cus = None, None, {}
        if not path or path.startswith("[") or not os.path.isabs(path):
            self.problem = f"{path or 'an unnamed object'} has no file (vdso or anonymous code)"
            return
        if not os.path.isfile(path):
            self.problem = f"{path} is gone (moved or deleted after the run)"
            return
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        try:
            self._fh = open(path, "rb")
            self._files.append(self._fh)
            elf = ELFFile(self._fh)
        except (OSError, ELFError) as exc:
            self.problem = f"{path} cannot be read as ELF ({exc})"
            return
        on_disk = _build_id(elf)
        if build_id and on_disk != build_id:
            self.problem = (
                f"{path} was rebuilt after the run (build id {on_disk or 'none'} on "
                f"disk, {build_id} when it ran)"
            )
            return
        if not build_id:
            st = os.stat(path)
            if (size, mtime_ns) != (st.st_size, st.st_mtime_ns):
                self.problem = f"{path} changed after the run (no build id; size or mtime differ)"
                return
        self.funcs = self._symbols(elf)
        dwarf_elf = (
            elf
            if elf.has_dwarf_info() and elf.get_section_by_name(".debug_line")
            else self._separate_debug(on_disk, self._files)
        )
        if dwarf_elf is not None:
            self.dwarf = dwarf_elf.get_dwarf_info()
        else:
            self.dwarf = None
            self.partial = (
                f"{path} has no debug information (built without -g): function+offset "
                "from the symbol table"
                if self.funcs
                else f"{path} is stripped (no debug information, no symbols)"
            )
            if not self.funcs:
                self.problem = self.partial

    @staticmethod
    def _separate_debug(build_id, files):
        """/usr/lib/debug/.build-id/ab/cdef.debug (Debian's -dbgsym packages)."""
        if not build_id:
            return None
        p = Path("/usr/lib/debug/.build-id") / build_id[:2] / (build_id[2:] + ".debug")
        if not p.is_file():
            return None
        from elftools.elf.elffile import ELFFile

        files.append(open(p, "rb"))
        return ELFFile(files[-1])

    def close(self):
        """Close the files it read (a closed object still answers what it resolved)."""
        for f in self._files:
            f.close()
        self._files = []

    @staticmethod
    def _symbols(elf):
        out = []
        for name in (".symtab", ".dynsym"):
            sec = elf.get_section_by_name(name)
            if sec is None or not hasattr(sec, "iter_symbols"):
                continue
            for s in sec.iter_symbols():
                if s["st_info"]["type"] == "STT_FUNC" and s["st_value"] and s.name:
                    out.append((s["st_value"], s["st_value"] + max(s["st_size"], 1), s.name))
            if out:
                break
        return sorted(out)

    def _symbol(self, a):
        i = bisect.bisect_right(self.funcs, (a, float("inf"), "")) - 1
        if i >= 0 and self.funcs[i][0] <= a < self.funcs[i][1]:
            return f"{self.funcs[i][2]}+{a - self.funcs[i][0]:#x}", self.funcs[i][2]
        return None, None

    # DWARF, read per compilation unit on first use: a big library with debug
    # information (libc's from /usr/lib/debug) costs only the units that were called from
    def _cu_at(self, q):
        """The compilation unit covering address q, or None."""
        if self._cu_index is None:
            self._cu_index = []
            aranges = self.dwarf.get_aranges()
            if aranges is not None:
                self._aranges = aranges
            else:  # no .debug_aranges: the units' own ranges
                for cu in self.dwarf.iter_CUs():
                    for lo, hi in _die_ranges(self.dwarf, cu, cu.get_top_DIE()):
                        self._cu_index.append((lo, hi, cu.cu_offset))
        off = None
        if self._aranges is not None:
            off = self._aranges.cu_offset_at_addr(q)
        else:
            off = next((o for lo, hi, o in self._cu_index if lo <= q < hi), None)
        if off is None:
            return None
        if off not in self._cus:
            self._cus[off] = self._load_cu(self.dwarf.get_CU_at(off))
        return self._cus[off]

    def _load_cu(self, cu):
        """(sorted line rows, their addresses, function scopes) of one unit."""
        comp_dir = _attr(cu.get_top_DIE(), "DW_AT_comp_dir") or ""
        lp = self.dwarf.line_program_for_CU(cu)
        lines = (
            sorted(_line_rows(lp, comp_dir), key=lambda r: (r[0], r[3])) if lp is not None else []
        )
        scopes = []
        for die in cu.iter_DIEs():
            if die.tag in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine"):
                name = _die_name(die)
                for lo, hi in _die_ranges(self.dwarf, cu, die):
                    scopes.append((lo, hi, hi - lo, name))
        return lines, [r[0] for r in lines], scopes

    def resolve(self, a):
        """(file, line, caller, reason) for the call before return address ``a``."""
        if a in self._memo:
            return self._memo[a]
        if self.problem:
            out = (None, None, UNKNOWN, self.problem)
        elif self.dwarf is None:
            shown, _ = self._symbol(a - 1)
            out = (
                None,
                None,
                shown or UNKNOWN,
                self.partial
                if shown
                else f"{self.path} is stripped: no debug information and "
                f"no symbol covers offset {a:#x}",
            )
        else:
            q = a - 1
            lines, at, scopes = self._cu_at(q) or ([], [], [])
            i = bisect.bisect_right(at, q) - 1
            file = line = None
            # the row before q, in the same sequence (an end_sequence row closes it)
            if i >= 0 and not lines[i][3] and i + 1 < len(lines) and q < lines[i + 1][0]:
                _, file, line, _ = lines[i]
            inner = [s for s in scopes if s[0] <= q < s[1] and s[3]]
            caller = min(inner, key=lambda s: s[2])[3] if inner else self._symbol(q)[1]
            if file is None or not line:
                out = (
                    None,
                    None,
                    caller or UNKNOWN,
                    f"{self.path}: no line information at offset {a:#x}",
                )
            else:
                out = (file, int(line), caller or UNKNOWN, None)
        self._memo[a] = out
        return out


def _attr(die, name):
    a = die.attributes.get(name)
    if a is None:
        return None
    v = a.value
    return v.decode(errors="replace") if isinstance(v, bytes) else v


def _die_name(die, depth=0):
    name = _attr(die, "DW_AT_name")
    if name or depth > 4:
        return name
    for ref in ("DW_AT_abstract_origin", "DW_AT_specification"):
        if ref in die.attributes:
            try:
                return _die_name(die.get_DIE_from_attribute(ref), depth + 1)
            except Exception:  # noqa: BLE001 - a reference pyelftools cannot follow: no name
                return None
    return None


def _die_ranges(dwarf, cu, die):
    lo = die.attributes.get("DW_AT_low_pc")
    hi = die.attributes.get("DW_AT_high_pc")
    if lo is not None and hi is not None:
        end = hi.value if hi.form == "DW_FORM_addr" else lo.value + hi.value
        return [(lo.value, end)]
    if "DW_AT_ranges" in die.attributes:
        try:
            rl = dwarf.range_lists()
            ranges = (
                rl.get_range_list_at_offset(die.attributes["DW_AT_ranges"].value, cu=cu)
                if hasattr(rl, "get_range_list_at_offset")
                else []
            )
        except Exception:  # noqa: BLE001 - unreadable range list: this scope is skipped
            return []
        base = _attr(cu.get_top_DIE(), "DW_AT_low_pc") or 0
        out = []
        for r in ranges:
            if hasattr(r, "base_address"):  # a base address entry: the rest are relative to it
                base = r.base_address
            elif hasattr(r, "begin_offset"):
                out.append(
                    (r.begin_offset, r.end_offset)
                    if getattr(r, "is_absolute", False)
                    else (r.begin_offset + base, r.end_offset + base)
                )
        return out
    return []


def _line_rows(lp, comp_dir):
    """[(address, file, line, end_sequence)] of one line program."""
    version = lp.header["version"]
    files, dirs = lp.header["file_entry"], lp.header["include_directory"]

    @lru_cache(maxsize=None)
    def file_name(index):
        k = index - 1 if version < 5 else index
        if not 0 <= k < len(files):
            return None
        fe = files[k]
        name = fe.name.decode(errors="replace") if isinstance(fe.name, bytes) else fe.name
        d = fe.dir_index - 1 if version < 5 else fe.dir_index
        if version < 5 and fe.dir_index == 0:
            base = comp_dir
        else:
            base = dirs[d] if 0 <= d < len(dirs) else ""
            base = base.decode(errors="replace") if isinstance(base, bytes) else base
            if not os.path.isabs(base):
                base = os.path.join(comp_dir, base)
        return os.path.normpath(os.path.join(base, name))

    rows = []
    for entry in lp.get_entries():
        st = entry.state
        if st is None:
            continue
        rows.append(
            (
                st.address,
                None if st.end_sequence else file_name(st.file),
                st.line,
                bool(st.end_sequence),
            )
        )
    return rows


# ---- the run's table --------------------------------------------------------------


class Resolver:
    """Objects by identity (path, build id, size, mtime), shared by every rank."""

    def __init__(self):
        self._objects = {}

    def obj(self, o):
        key = (o.get("path"), o.get("build_id"), o.get("size"), o.get("mtime_ns"))
        if key not in self._objects:
            self._objects[key] = ElfObject(*key)
        return self._objects[key]

    def close(self):
        for o in self._objects.values():
            o.close()

    def problems(self):
        """{path: why nothing in it resolves} of the objects asked about so far that
        could not be read as they ran (rebuilt, changed, gone, stripped)."""
        return {o.path: o.problem for o in self._objects.values() if o.problem}


def _locate(objects, addr):
    """(object record, address relative to its load bias) of an absolute address."""
    for o in objects:
        for lo, hi in o.get("segments", []):
            if lo <= addr - 1 < hi:
                return o, addr - int(o.get("base", 0))
    return None, None


def _frame(resolver, objects, addr):
    o, rel = _locate(objects, addr)
    if o is None:
        return None, None, (None, None), UNKNOWN, f"address {addr:#x} is in no loaded object"
    file, line, caller, reason = resolver.obj(o).resolve(rel)
    return o.get("path"), rel, (file, line), caller, reason


def objects_by_rank(raw_dir):
    """{rank: the loaded objects it listed} from the run's callsites.<node>.jsonl (with
    --callsites, or --trace: the objects that hold its trace's call sites)."""
    return {rank: objects for rank, (objects, _) in listed_by_rank(raw_dir).items()}


def listed_by_rank(raw_dir):
    """{rank: (loaded objects, Python sites)} from the run's callsites.<node>.jsonl: the
    Python sites (mpi4py) as {id: (file, line, function)}."""
    out = {}
    for path in callsite_files(raw_dir):
        for rec in read_records(path):
            objects, python = out.setdefault(int(rec["rank"]), ([], {}))
            objects.extend(rec["objects"])
            python.update({int(p[0]): tuple(p[1:]) for p in rec.get("python_sites", [])})
    return out


def resolve_addresses(addresses, objects, resolver=None, python=None):
    """(file, line, caller, reason) of each absolute return address of one rank, whose
    loaded objects are ``objects`` and Python sites ``python`` (:func:`listed_by_rank`):
    what the ``callsites`` table says of that address (file None and ``line`` None where
    unknown; caller "unknown" when nothing is known; reason empty when resolved).  An
    "address" below ``PY_SITE_MAX`` is a Python site id (mpi4py's calls)."""
    return [r[:4] for r in resolve_sites(addresses, objects, resolver, python)]


def resolve_sites(addresses, objects, resolver=None, python=None):
    """As :func:`resolve_addresses`, each with two more: the object's path and the
    address in it (None for a Python site or an address in no object)."""
    resolver = resolver or Resolver()
    out = []
    for a in addresses:
        if int(a) < PY_SITE_MAX:  # a Python line: the record's python_sites name it
            file, line, caller = (python or {}).get(int(a), (None, None, UNKNOWN))
            out.append((file, line, caller, "" if file else f"Python site {a} not listed"))
            out[-1] += (None, None)
            continue
        obj, rel, (file, line), caller, reason = _frame(resolver, objects, int(a))
        out.append((file, line, caller, reason or "", obj, rel))
    return out


#: Site "addresses" below this are Python sites (cs_prof_sites.h: CS_PY_SITE_MAX).
PY_SITE_MAX = 1 << 20
#: The reason of a site in mpi4py's compiled module that no Python line made (mpi4py's
#: own calls at MPI_Finalize, e.g. freeing its communicator copies): said once, short.
MPI4PY_NO_LINE = "made by mpi4py itself, not from a Python line (e.g. at MPI_Finalize)"


def _is_mpi4py(path):
    p = Path(path or "")
    return p.parent.name == "mpi4py" and p.name.startswith("MPI.")


def _site_rows(resolver, rec, tick, sets):
    """The table's rows of one rank's record."""
    rows = []
    rank, objects = int(rec["rank"]), rec["objects"]
    python = {int(p[0]): p[1:] for p in rec.get("python_sites", [])}
    for site in rec["sites"]:
        func, calls, nbytes, ticks, addrs = site[0], site[1], site[2], site[3], site[4:]
        if int(addrs[0]) < PY_SITE_MAX:  # a Python line (mpi4py): file, line, function
            file, line, caller = python.get(int(addrs[0]), (None, 0, UNKNOWN))
            obj, rel, reason = file, line, "" if file else f"Python site {addrs[0]} not listed"
        else:
            obj, rel, (file, line), caller, reason = _frame(resolver, objects, int(addrs[0]))
            if reason and _is_mpi4py(obj):
                reason = MPI4PY_NO_LINE
        stack = []
        for a in addrs[1:]:
            if int(a) < PY_SITE_MAX:  # a Python caller
                f2, l2, c2 = python.get(int(a), (None, 0, UNKNOWN))
                stack.append(f"{c2} ({os.path.basename(f2)}:{l2})" if f2 else c2)
                continue
            _, _, (f2, l2), c2, _ = _frame(resolver, objects, int(a))
            stack.append(f"{c2} ({os.path.basename(f2)}:{l2})" if f2 else c2)
        rows.append(
            {
                "rank": rank,
                "function": func,
                "file": file,
                "line": float(line) if line else np.nan,
                "caller": caller,
                "object": obj,
                "offset": int(rel) if rel is not None else -1,
                "depth": len(addrs),
                "stack": " <- ".join(stack) if stack else None,
                "calls": int(calls),
                "bytes": float(nbytes) if "bytes" in sets else np.nan,
                "time_s": ticks * tick.get(rank, np.nan) if "timers" in sets else np.nan,
                "reason": reason,
            }
        )
    return rows


def callsites_table(raw_dir, ranks=None, sets=()):
    """The ``callsites`` DataFrame of a run's raw files, or None without any.

    ``ranks``: the run's ranks table (tick_s per rank for time_s); ``sets``: the
    counter sets (bytes is NaN without "bytes", time_s without "timers")."""
    files = callsite_files(raw_dir)
    if not files:
        return None
    tick = dict(zip(ranks["rank"].astype(int), ranks["tick_s"])) if ranks is not None else {}
    resolver, rows = Resolver(), []
    try:
        for path in files:
            for rec in read_records(path):
                rows += _site_rows(resolver, rec, tick, sets)
    finally:
        resolver.close()
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=COLUMNS)
    keys = ["rank", "function", "object", "offset", "stack"]
    df = df.groupby(keys, dropna=False, sort=False, as_index=False).agg(
        {
            "file": "first",
            "line": "first",
            "caller": "first",
            "depth": "first",
            "calls": "sum",
            "bytes": "sum",
            "time_s": lambda s: s.sum(min_count=1),
            "reason": "first",
        }
    )
    if "bytes" not in sets:
        df["bytes"] = np.nan
    df = (
        df[COLUMNS]
        .sort_values(["rank", "calls", "function"], ascending=[True, False, True], kind="stable")
        .reset_index(drop=True)
    )
    df["reason"] = df["reason"].fillna("")
    for col in ("file", "caller", "object", "stack"):  # text, None where missing (never NaN)
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def top_callsites(df, n=10, by=None):
    """Call sites summed over ranks, the top ``n`` by time (when timed), else calls
    then bytes: function, file, line, caller, ranks, calls, bytes, time_s, reason."""
    if df is None or not len(df):
        return df
    if by is None:
        by = "time_s" if df["time_s"].notna().any() else "calls"
    keys = ["function", "file", "line", "caller", "stack", "reason"]
    g = (
        df.fillna({"file": "", "line": -1, "stack": ""})
        .groupby(keys, sort=False, as_index=False)
        .agg(
            ranks=("rank", "nunique"),
            calls=("calls", "sum"),
            bytes=("bytes", lambda s: s.sum(min_count=1)),
            time_s=("time_s", lambda s: s.sum(min_count=1)),
        )
    )
    g["file"] = g["file"].replace("", None)
    g["line"] = g["line"].where(g["line"] >= 0).astype("Int64")
    g["stack"] = g["stack"].replace("", None)
    g["reason"] = g["reason"].replace("", None)
    order = [by] + [c for c in ("calls", "bytes") if c != by]
    return (
        g.sort_values(order, ascending=False, kind="stable", na_position="last")
        .head(n)
        .reset_index(drop=True)
    )


def reason_notes(rows, key="reason"):
    """Say each distinct reason once: a row's ``key`` becomes ``[n]``, and the list of
    the reasons (the n-th is note n) is returned, in order of first use."""
    notes = []
    for r in rows:
        text = r.get(key)
        if not isinstance(text, str) or not text:  # none (None, NaN or "")
            r[key] = None
        else:
            if text not in notes:
                notes.append(text)
            r[key] = f"[{notes.index(text) + 1}]"
    return notes


def site_label(file, line):
    """``name.c:42`` of a call site row; None for an unresolved one (its file missing:
    None or NaN, as a table gives it)."""
    if not isinstance(file, str) or not file:
        return None
    name = os.path.basename(file)
    try:
        return f"{name}:{int(line)}"
    except (TypeError, ValueError):  # a line unknown (NaN, <NA>) or not a number
        return name


__all__ = [
    "callsites_table",
    "top_callsites",
    "read_records",
    "callsite_files",
    "ElfObject",
    "site_label",
    "reason_notes",
    "objects_by_rank",
    "listed_by_rank",
    "resolve_addresses",
    "resolve_sites",
    "Resolver",
    "UNKNOWN",
]
