"""Redaction before persistence: the rules, and a secret sent through each write path never
reaching the database (or the spool). The receiver's and the LangChain handler's paths are in
test_receiver.py and test_langchain.py, with the same ``assert_absent``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdocket.events import (
    KINDS,
    PAYLOAD_TYPES,
    Case,
    Dataset,
    Event,
    ToolCalled,
    validate_payload,
)
from agentdocket.store import RedactionConfigError, Redactor, open_store
from tests.helpers.db import assert_absent, cli
from tests.helpers.recorder import Recorder

OPENAI_KEY = "sk-proj-Zq8T3xLw0aVbN4mR7yCe2uKd"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter2-correct-horse"
EMAIL = "ada.lovelace@example.org"


def _event(payload: dict[str, object], kind: str = "tool.called") -> Event:
    return Event.create(trace_id="a" * 32, span_id="b" * 16, seq=1, kind=kind, payload=payload)


def test_default_rules_redact_secret_members_and_secret_patterns() -> None:
    r = Redactor()
    out = r.value(
        {
            "openai_api_key": "x",
            "X-Api-Key": "y",
            "headers": {"Authorization": "Basic dXNlcjpwYXNz"},
            "password": {"nested": "object"},
            "note": f"use {OPENAI_KEY} and {AWS_KEY}, mail {EMAIL}",
            "input_tokens": 12,
            "token": None,
            "max_tokens": 5,
        }
    )
    assert out["openai_api_key"] == "[REDACTED:openai_api_key]"
    assert out["X-Api-Key"] == "[REDACTED:X-Api-Key]"
    assert out["headers"] == {"Authorization": "[REDACTED:Authorization]"}
    assert out["password"] == "[REDACTED:password]"
    assert out["note"] == f"use [REDACTED:openai_key] and [REDACTED:aws_access_key], mail {EMAIL}"
    # Counts are not secrets, and a null stays null.
    assert (out["input_tokens"], out["token"], out["max_tokens"]) == (12, None, 5)


def test_a_clean_event_passes_through_as_the_same_object() -> None:
    r = Redactor()
    clean = _event({"call_id": "c1", "tool": "search", "arguments": {"q": "tokens of a key"}})
    assert r.event(clean) is clean
    dirty = _event({"call_id": "c1", "tool": "search", "arguments": {"api_key": "k"}})
    redacted = r.event(dirty)
    assert redacted.payload["arguments"] == {"api_key": "[REDACTED:api_key]"}
    assert (redacted.event_id, redacted.kind) == (dirty.event_id, dirty.kind)


def test_no_typed_payload_field_is_a_secret_name() -> None:
    """Member rules replace whole values; a typed field they matched would break its payload."""
    key = Redactor()._key  # type: ignore[attr-defined]
    fields = {f for kind in KINDS for f in PAYLOAD_TYPES[kind].__dataclass_fields__}
    assert fields and not [f for f in fields if key.match(f)]


def test_settings_file_adds_sets_patterns_members_and_marker(tmp_path: Path) -> None:
    path = tmp_path / "redact.toml"
    path.write_text(
        '[redaction]\nbuiltins = ["secrets", "email"]\nkeys = ["ssn"]\nmarker = "<{rule}>"\n'
        '[redaction.patterns]\nemployee_id = "EMP-[0-9]{6}"\n'
    )
    r = Redactor.from_file(path)
    out = r.value({"ssn": "123-45-6789", "text": f"{EMAIL} is EMP-004211", "password": "p"})
    assert out == {"ssn": "<ssn>", "text": "<email> is <employee_id>", "password": "<password>"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[redaction]\nbuiltins = ["secret"]\n', "builtins: unknown set 'secret'"),
        ("[redaction]\ncolour = 1\n", "unknown setting(s) colour"),
        ('[redaction.patterns]\nbad = "("\n', "pattern 'bad'"),
        ("[redaction\n", "not valid TOML"),
    ],
)
def test_bad_settings_name_the_file_and_the_setting(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "redact.toml"
    path.write_text(text)
    with pytest.raises(RedactionConfigError) as err:
        Redactor.from_file(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_env_chooses_off_default_or_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTDOCKET_REDACT", "off")
    assert not Redactor.from_env().active
    monkeypatch.setenv("AGENTDOCKET_REDACT", "default")
    assert Redactor.from_env() == Redactor()
    monkeypatch.setenv("AGENTDOCKET_REDACT", str(tmp_path / "missing.toml"))
    with pytest.raises(RedactionConfigError, match=r"missing\.toml: cannot read"):
        Redactor.from_env()


# --- the write paths ---------------------------------------------------------------------------


def test_store_append_and_dataset_registration(url: str) -> None:
    case = Case(case_id="c1", question=f"Reset the password of {OPENAI_KEY}")
    with open_store(url) as store:
        store.datasets.register(Dataset("ds", "1", (case,)))
        store.append(
            [
                _event({"call_id": "c", "tool": "t", "arguments": {"password": PASSWORD}}),
                _event({"text": f"done with {AWS_KEY}"}, kind="response"),
            ]
        )
        assert store.reader.counts()["events"] == 2
    assert_absent(url, OPENAI_KEY, PASSWORD, AWS_KEY)


def test_batches_prepared_ahead_are_redacted_too(url: str) -> None:
    """Many batches: each is prepared on a second thread while the one before is written,
    its payloads probed one by one there (one batch alone is probed in one call)."""
    events = [
        Event.create(
            trace_id="a" * 32,
            span_id=f"{i + 1:016x}",
            seq=i,
            kind="tool.called",
            payload={"call_id": f"c{i}", "tool": "t", "arguments": {"token": f"{PASSWORD}{i}"}},
        )
        for i in range(5)
    ] + [_event({"text": f"done with {AWS_KEY}"}, kind="response")]
    with open_store(url) as store:
        assert store.append(events, batch_size=2).inserted == len(events)
    assert_absent(url, PASSWORD, AWS_KEY)


def test_tracer(url: str, tmp_path: Path) -> None:
    recorder = Recorder(url, tmp_path / "spool")
    try:
        with recorder.tracer.run("agent", question=f"my key is {OPENAI_KEY}") as run:
            with run.tool_call("login", {"user": "ada", "password": PASSWORD}) as call:
                call.result({"session_token": "s3ss10n-v4lue", "ok": True})
            run.respond(f"logged in; {AWS_KEY}")
        recorder.flush()
    finally:
        recorder.close()
    with open_store(url) as store:
        [[trace]] = list(store.scoring.batches())
        assert [c.arguments for c in trace.tool_calls()] == [
            {"user": "ada", "password": "[REDACTED:password]"}
        ]
    assert_absent(url, OPENAI_KEY, PASSWORD, AWS_KEY, "s3ss10n-v4lue")


def test_spool_never_holds_a_secret(tmp_path: Path) -> None:
    """With the database away, the batch is spooled, redacted; once back, it arrives."""
    url = f"sqlite:///{tmp_path / 'later.db'}"
    fails = {"on": True}

    def factory():  # type: ignore[no-untyped-def]
        if fails["on"]:
            raise OSError("database away")
        return open_store(url)

    recorder = Recorder(url, tmp_path / "spool", store_factory=factory, retry_initial_s=0.0)
    try:
        with recorder.tracer.run("agent") as run:
            run.respond(f"the key is {OPENAI_KEY}")
        recorder.flush()
        assert recorder.exporter.stats.spooled > 0
        spooled = b"".join(p.read_bytes() for p in (tmp_path / "spool").iterdir())
        assert b"[REDACTED:openai_key]" in spooled and OPENAI_KEY.encode() not in spooled
        fails["on"] = False
        assert recorder.exporter.flush_spool()
    finally:
        recorder.close()
    assert_absent(url, OPENAI_KEY)
    with open_store(url) as store:
        assert store.reader.counts()["events"] > 0


def test_importer(url: str, tmp_path: Path) -> None:
    record = {
        "trace_id": "c" * 32,
        "run": {
            "agent": "a",
            "question": f"mail {EMAIL}, key {OPENAI_KEY}",
            "started_at": "2026-11-20T09:01:00Z",
        },
        "steps": [
            {
                "kind": "tool.called",
                "ts": "2026-11-20T09:01:00Z",
                "payload": {"call_id": "1", "tool": "t", "arguments": {"apiKey": "k-123"}},
            }
        ],
    }
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(record) + "\n")
    cli(url, "import", "traces", str(path))
    assert_absent(url, OPENAI_KEY, "k-123")
    # E-mail addresses are kept unless the settings ask for them to go.
    with open_store(url) as store:
        [[trace]] = list(store.scoring.batches())
        assert EMAIL in (trace.started.question if trace.started else "")


def test_tool_called_payload_type_is_redactable() -> None:
    """A redacted typed payload still validates as its kind."""
    payload = ToolCalled(call_id="1", tool="t", arguments={"password": "x"})
    event = Redactor().event(
        Event.create(trace_id="d" * 32, span_id="e" * 16, seq=0, payload=payload)
    )
    assert event.payload["arguments"] == {"password": "[REDACTED:password]"}
    validate_payload("tool.called", dict(event.payload))


# Pieces of text a payload may hold: every rule's trigger, near misses, case variants.
_PIECES = [
    "sk-proj-Zq8T3xLw0aVbN4mR7yCe2uKd",
    "SK-",
    "AKIAIOSFODNN7EXAMPLE",
    "asia",
    "ghp_" + "a1" * 18,
    "github_pat_" + "B2" * 21,
    "xoxb-1234567890-abc",
    "AIza" + "x" * 35,
    "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f",
    "Bearer abcdefghijklmnopqrstuv",
    "-----BEGIN RSA PRIVATE KEY-----",
    "ada@example.org",
    "key",
    "Token",
    "passwort",
    "\u212aey",  # KELVIN SIGN: lowercases to k
    " ",
    "\u00e9t\u00e9",
    "\ud800",  # a lone surrogate
]


@given(
    st.dictionaries(
        st.lists(st.sampled_from(_PIECES), max_size=3).map("".join),
        st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
        max_size=4,
    ),
    st.sampled_from(["secrets", "email"]),
)
@settings(max_examples=300, deadline=None)
def test_the_probe_never_says_no_where_a_rule_redacts(value: dict[str, str], extra: str) -> None:
    """The probe (one pass of an automaton over every rule's literal) may say yes where no rule
    matches, never no where one does: whatever it passes unchanged is what the rules keep."""
    r = Redactor.from_settings({"builtins": ["secrets", extra], "keys": ["employee_number"]})
    if r.value(value) != value:
        assert r.needs(value)
    for text in (*value, *value.values()):
        if r.value(text) != text:
            assert r.needs(text)
