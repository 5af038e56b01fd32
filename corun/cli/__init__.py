"""The `corun` command line (main) and its result subcommands (results)."""
