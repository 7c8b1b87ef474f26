"""Machine models with a made-up progress section (docs/progress.md), for the tests of
the progress queries and of the fixes that follow them."""

from commscope.models import progress as pg
from commscope.models.machine_model import machine_model_from_dict


def progress_model(cases, mpi_library="MPI X"):
    """A machine model of ``mpi_library`` whose progress section holds ``cases``:
    {(size_bytes, case, sender, receiver): overlap fraction, or a dict of the row's values
    (overlap_fraction, transfer_s, ...)}."""
    rows = [
        dict(
            size_bytes=s,
            case=c,
            sender=snd,
            receiver=rcv,
            reps=3,
            **(o if isinstance(o, dict) else {"overlap_fraction": o}),
        )
        for (s, c, snd, rcv), o in cases.items()
    ]
    entry = pg.section_entry(rows, mpi_library=mpi_library, mpi_name="x")
    return machine_model_from_dict(
        {
            "schema": "commscope.machine-model",
            "schema_version": 1,
            "parameters": [
                {
                    "protocol": "rendezvous",
                    "locality": "intra-socket",
                    "alpha_s": 1e-6,
                    "beta_s_per_byte": 1e-10,
                }
            ],
            "machine": {"mpi_library": mpi_library},
            "progress": {pg.entry_key(mpi_library): entry},
        }
    )
