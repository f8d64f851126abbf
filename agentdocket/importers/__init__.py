"""Datasets and published results from files: the IBM coalitions study, ToolAlpaca, TaskWeaver
auto_eval cases, GRAMMAR result records, and agentdocket's own interchange format (``import
traces`` / ``export traces``). Each importer parses and validates a whole source first and
names the file and place of anything it cannot read; storing is all or nothing."""
