"""agentdocket: record what AI agents do as an append-only event log, and score it."""

__version__ = "0.2.0"
