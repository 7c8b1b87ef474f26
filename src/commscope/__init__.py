"""commscope: measure, instrument and model MPI communication in multithreaded codes."""

__version__ = "0.1.0"
