"""The ``gizmo-host`` command line: one module per subcommand (``main`` lists them), and what
they share (``common``). Importing one command's module imports no other command."""
