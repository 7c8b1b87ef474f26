"""CLI command modules; each defines ``register(registry)`` (see ``commscope.cli``)."""
