"""What a prediction needs from the machine model, and the error when a term is missing.

A prediction that needs a term the machine model lacks raises :class:`MissingTerm`
naming the term and the benchmark that measures it, never a default (issue 26).
"""

from __future__ import annotations

from ..errors import InputError
from .machine_model import canonical_locality

#: Which benchmark measures each term a prediction may need (``commscope fit`` fits them
#: from its runs).
TERM_BENCHMARKS = {
    "gamma_s": "`commscope bench hvpingpong` (receives in send order and reversed), "
    "then `commscope fit`",
    "delta_s_per_byte": "`commscope bench hvpingpong --contention` on 2 or more nodes, "
    "then `commscope fit`",
    "R_N_Bps": "`commscope bench pingpong --pairs 2` (or more) across nodes, then `commscope fit`",
    "parameters": "`commscope bench pingpong` with its two ranks at that locality, then "
    "`commscope fit`",
    "queue_search": "`commscope bench hvpingpong` (receives in send order and reversed; "
    "--queues adds the queue lengths), then `commscope fit` (one MPI's runs)",
}


class MissingTerm(InputError):
    """A machine model lacks a term a prediction needs: names the term and the benchmark
    that measures it (CLI: exit status 2)."""

    def __init__(self, source, term, needed_for, benchmark_term=None):
        self.term = term
        self.benchmark = TERM_BENCHMARKS[benchmark_term or term]
        super().__init__(
            source,
            term,
            f"not in the machine model, needed for {needed_for}; measured by {self.benchmark}",
        )


def require_term(machine_model, term, needed_for):
    """The machine model's ``gamma_s`` or ``delta_s_per_byte``; :class:`MissingTerm` if unset."""
    value = getattr(machine_model, term)
    if value is None:
        raise MissingTerm(getattr(machine_model, "source", "machine model"), term, needed_for)
    return value


def require_params(machine_model, protocol, locality):
    """The (protocol, locality) parameters; :class:`MissingTerm` naming the benchmark if absent."""
    key = (protocol, canonical_locality(locality))
    if key not in machine_model.params:
        have = ", ".join(f"{p}/{loc}" for p, loc in sorted(machine_model.params)) or "none"
        raise MissingTerm(
            getattr(machine_model, "source", "machine model"),
            f"parameters {key[0]}/{key[1]}",
            f"{key[1]} messages (the machine model has {have})",
            "parameters",
        )
    return machine_model.params[key]
