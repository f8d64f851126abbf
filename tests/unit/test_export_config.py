"""A scoring config's ``[export]`` table: where a follower sends each new verdict."""

from __future__ import annotations

import pytest

from agentdocket.follow.config import ConfigFileError, ExportConfig, parse

SCORER = {"scorer": [{"name": "answer.exact"}]}


def test_an_export_table_is_read_with_its_defaults() -> None:
    config = parse({**SCORER, "export": {"otlp": "http://tempo:4318"}}, "s.toml")
    assert config.export == ExportConfig(otlp="http://tempo:4318")
    full = parse(
        {
            **SCORER,
            "export": {
                "otlp": "tempo:4317",
                "protocol": "grpc",
                "headers": {"Authorization": "Bearer x"},
                "insecure": True,
                "timeout_seconds": 2,
                "batch": 50,
            },
        }
    )
    assert full.export == ExportConfig(
        otlp="tempo:4317",
        protocol="grpc",
        headers={"authorization": "Bearer x"},
        insecure=True,
        timeout_seconds=2.0,
        batch=50,
    )
    assert parse(SCORER).export is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({}, r"s\.toml: export\.otlp: the OTLP endpoint is required"),
        ({"otlp": "x", "port": 1}, r"s\.toml: export: unknown key 'port' \(known: batch, "),
        ({"otlp": "x", "protocol": "http/json"}, r"export\.protocol: 'http/json' \(expected "),
        ({"otlp": "x", "headers": {"a": 1}}, r"export\.headers: expected a table of strings"),
        ({"otlp": "x", "insecure": "yes"}, r"export\.insecure: expected true or false"),
        ({"otlp": "x", "batch": 0}, r"export\.batch: 0 is out of range \(must be at least 1\)"),
        ({"otlp": "x", "timeout_seconds": 0}, r"export\.timeout_seconds: 0 is out of range"),
    ],
)
def test_a_bad_export_table_is_named_with_its_place(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigFileError, match=message):
        parse({**SCORER, "export": table}, "s.toml")


def test_export_must_be_a_table() -> None:
    with pytest.raises(ConfigFileError, match=r"s\.toml: \[export\] must be a table"):
        parse({**SCORER, "export": "http://x"}, "s.toml")
