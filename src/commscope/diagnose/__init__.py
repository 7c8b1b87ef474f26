"""The diagnosis: from one profile run to what is wrong, who causes it, where the time
is lost, the fix and what it saves (docs/diagnose.md).

Modules, bottom up:

* :mod:`.timeline`   the traced calls of every thread, with what each waited for
                     (matched messages, collective instances, requests);
* :mod:`.waits`      Scalasca's wait states on that timeline, with the waits a late
                     rank passed on (delay propagation) credited to their cause;
* :mod:`.replay`     the trace replayed with a change (balanced work, an ideal or
                     modelled network, calls that no longer wait): a predicted run time;
* :mod:`.efficiency` the POP efficiency hierarchy (load balance, serialisation,
                     transfer; the OpenMP level with OMPT data);
* :mod:`.findings`   the findings, one record type ranked by the time they cost, each
                     with its fix and the saving a replay predicts;
* :mod:`.text`       how the findings read in a terminal.

It reads the run through the profile API and asks :mod:`commscope.models` for every
modelled time; it writes nothing.  It sits above :mod:`commscope.predict` because a
thread-imbalance finding's early-bird alternative is the advisor's prediction.
"""
