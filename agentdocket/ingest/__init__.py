"""Foreign telemetry into events, by role. Decoding: OTLP requests
(:mod:`~agentdocket.ingest.otlp`, :mod:`~agentdocket.ingest.readers`) and spans of any
convention mapped to events (:mod:`~agentdocket.ingest.mapping`,
:mod:`~agentdocket.ingest.conventions`), and the LangChain callback handler
(:mod:`~agentdocket.ingest.langchain`). Writing: durable delivery, the sink that stores events
or spools them while the database is away (:mod:`~agentdocket.ingest.sink`,
:mod:`~agentdocket.ingest.spool`, :mod:`~agentdocket.ingest.group_commit`) behind the
:class:`~agentdocket.ingest.delivery.Delivery` interface the tracer's exporter knows. Records
the database refuses become dead letters in the store. The transport (the OTLP receivers of
``serve``) lives in :mod:`agentdocket.runtime`."""
