"""Foreign telemetry into events: decoding OTLP requests (:mod:`~agentdocket.ingest.otlp`),
mapping spans of any convention to events (:mod:`~agentdocket.ingest.mapping`), the OTLP/HTTP
receiver behind ``agentdocket serve`` (:mod:`~agentdocket.ingest.receiver`), the LangChain
callback handler (:mod:`~agentdocket.ingest.langchain`), and durable delivery: the sink that
stores events or spools them while the database is away (:mod:`~agentdocket.ingest.sink`,
:mod:`~agentdocket.ingest.spool`), which the tracer's exporter, the receiver and the handler
all use. Records the database refuses become dead letters in the store."""
