"""The command groups of the ``agentdocket`` command line (see :mod:`agentdocket.cli`)."""
