"""What a run collects and how it is read back, shared by benchmarks, profiles and matching.

:mod:`lifecycle`: the steps around a run's job (record, launch with collectors, finalise,
finish); :mod:`ompt`: the OMPT thread-timing collector and its reader; :mod:`node_files`:
the profiler's node files (layout and reader); :mod:`trace`: the event trace reader;
:mod:`clocks`: clock offsets between nodes; :mod:`callsites`: return addresses resolved
to file, line and caller.  Above ``models``, below ``bench``, ``profile`` and ``matching``.
"""
