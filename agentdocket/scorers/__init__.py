"""agentdocket.scorers: not built yet (see the project issues)."""
