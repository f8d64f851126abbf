"""Citus: a PostgreSQL coordinator with workers. Its recorder (:mod:`.recorder`: the
PostgreSQL recorder with what a distributed log needs), the tables' placement
(:mod:`.distribution`), distributing and undistributing them around migrations (:mod:`.ops`),
and a local cluster's databases for scripts/citus-up and the tests (:mod:`.cluster`, which
imports nothing but the standard library at first)."""
