"""The command line: thin typer commands over the Python API."""
