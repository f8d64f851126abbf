"""PostgreSQL: its recorder (:mod:`.recorder`), the binary COPY of events (:mod:`.copy`), the
one lock order of partition DDL and the trace locks of writers (:mod:`.locks`), retention's
months as partitions (:mod:`.months`) and the driver's errors mapped into the store's
(:mod:`.errors`)."""
