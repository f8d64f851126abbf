"""What agentdocket sends out: its verdicts as the GenAI conventions' evaluation events."""
