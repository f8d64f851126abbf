"""Each framework test gets a store with the scenario's dataset and `agentdocket serve` in
front of it (OTLP/HTTP and OTLP/gRPC)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentdocket.store import open_store
from tests.helpers.frameworks import dataset
from tests.helpers.otlp_server import Server


@pytest.fixture
def weather_url(url: str) -> str:
    """A store (of each kind) holding the scenario's dataset."""
    with open_store(url) as store:
        store.datasets.register(dataset())
    return url


@pytest.fixture
def server(weather_url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(weather_url, tmp_path / "spool", grpc=True).start()
    yield s
    s.stop()
