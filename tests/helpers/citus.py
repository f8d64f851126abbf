"""A database of the local Citus cluster (scripts/citus-up), made on the coordinator and on
every worker, with the extension and the workers registered, and dropped again: by
agentdocket.store.backends.citus.cluster, which citus-up runs too (here through psycopg)."""

from __future__ import annotations

from agentdocket.store.backends.citus.cluster import WORKERS, Cluster

# the coordinator's URL, exported by scripts/test when scripts/citus-up made the cluster
CITUS_ENV = "AGENTDOCKET_TEST_CITUS_URL"

__all__ = ["CITUS_ENV", "WORKERS", "Cluster"]
