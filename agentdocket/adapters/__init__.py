"""agentdocket.adapters: not built yet (see the project issues)."""
