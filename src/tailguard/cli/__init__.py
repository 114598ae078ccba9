"""Command-line face of tailguard: one module per subcommand."""
