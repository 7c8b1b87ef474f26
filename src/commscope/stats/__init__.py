"""Model: the statistics behind the predictions.

GEV fits by MOM, PWM and MLE and EMMA (:mod:`evt`), parametric and non-parametric
bootstrap (:mod:`bootstrap`), thread-arrival statistics (:mod:`arrivals`).  Pure
functions of arrays: no files, no MPI.
"""
