"""The engine: the episode runner (`runner.run_suite`), the only owner of runs and the only
code that writes runs to the store."""
