"""Runtime building blocks shared by suites: the hash-chained trajectory and its recorder."""
