"""agentdocket.tracer: not built yet (see the project issues)."""
