"""Which MPI functions the profiling library wraps, checked against the MPI's own mpi.h.

Every function the header declares in the families a user expects counted (data
movement, MPI_File_*, MPI_Win_* and one-sided calls, requests, communicators, buffers,
sessions: native/profiler/mpi_functions.py's FAMILIES) is either wrapped (FUNCTIONS)
or listed in LEFT_OUT with the reason.  A new MPI that declares a new function of those
families fails here until it is one or the other.  Only the header is read (the
compiler wrapper's preprocessor): nothing is built or run.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native" / "profiler"))
import mpi_functions as mf  # noqa: E402


def header_of(which):
    from commscope import mpi

    try:
        m = mpi.select_mpi(which)
    except Exception as exc:  # noqa: BLE001 - an MPI that is not installed: nothing to check
        pytest.skip(f"{which or 'the default MPI'} is not available: {exc}")
    return mf.header_prototypes(mf.mpi_header(m.mpicc))


def wrapped_for(protos):
    funcs, _ = mf.adopt_header(mf.parse(), protos)
    return {f["name"] for f in funcs}


@pytest.mark.parametrize("which", [None, "mpich"], ids=["open_mpi", "mpich"])
def test_every_function_of_the_families_is_wrapped_or_left_out_with_a_reason(which):
    protos = header_of(which)
    wrapped = wrapped_for(protos)
    missing = mf.unaccounted(protos, wrapped)
    assert not missing, (
        "declared by the MPI, in a wrapped family, neither wrapped nor in "
        f"mpi_functions.LEFT_OUT: {missing}"
    )
    assert "MPI_File_get_size" in wrapped  # IOR calls it
    # the list is about functions that are not wrapped, each with a reason
    assert not set(mf.LEFT_OUT) & wrapped
    assert len([n for n in protos if mf.FAMILIES.match(n)]) > 150  # the families are really read


def test_the_left_out_list_is_well_formed():
    assert all(isinstance(why, str) and len(why) > 10 for why in mf.LEFT_OUT.values())
    assert all(mf.FAMILIES.match(n) for n in mf.LEFT_OUT)
    listed = {f["name"] for f in mf.parse()}
    assert not set(mf.LEFT_OUT) & listed


def test_a_new_function_of_a_family_fails_until_wrapped_or_listed():
    declared = {
        "MPI_File_frobnicate": [],
        "MPI_Win_frobnicate_c": [],
        "MPI_Isend": [],
        "MPI_Isend_c": [],
        "MPI_Comm_rank": [],
        "MPI_Get_count_c": [],
        "MPI_Type_size": [],
    }
    assert mf.unaccounted(declared, {"MPI_Isend", "MPI_Isend_c"}) == [
        "MPI_File_frobnicate",
        "MPI_Win_frobnicate_c",
    ]
