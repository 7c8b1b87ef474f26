"""The HTML report: one static file, figures inline, opens without a server."""
