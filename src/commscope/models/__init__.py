"""Model: the performance models of the papers and the machine model they are fitted into.

The time of one message at a locality and ppn, term by term (:mod:`message_time`: the
one answer every view uses), point-to-point (postal, max-rate, queue search, contention,
whole patterns: :mod:`p2p`, fitted by :mod:`fitting` and :mod:`contention_fit`), the machine model file
(:mod:`machine_model`), partitioned communication (:mod:`partitioned`), stencil
message and thread counts (:mod:`stencil`), OSU-style tables (:mod:`osu`).  Models read
numbers, never run directories' files: ``commscope.machine_fit`` feeds them.
"""
