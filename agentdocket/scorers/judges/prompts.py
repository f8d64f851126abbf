"""The judge prompts, word for word from Figures 7-10 of "On Evaluating the Integration of Reasoning
and Action in LLM Agents with Database Question Answering" (one text file each, beside this module),
and their rendering.

Placeholders are the document's own: ``{question}``, ``{gold_answer}``, ``{answer}``,
``{database_text}``, ``{plan}``, ``{sql_results}``, ``{IP_reviews}``, ``{TE_reviews}``,
``{IS_reviews}``. Rendering refuses a missing or an unexpected value, so a prompt is never sent
with a hole in it.
"""

from __future__ import annotations

import string
from pathlib import Path

HERE = Path(__file__).resolve().parent / "prompts"
PROMPTS: dict[str, str] = {
    path.stem: path.read_text(encoding="utf-8") for path in sorted(HERE.glob("*.txt"))
}


def placeholders(name: str) -> set[str]:
    """The placeholders of prompt ``name``."""
    return {field for _, field, _, _ in string.Formatter().parse(PROMPTS[name]) if field}


def render(name: str, **values: str) -> str:
    """Prompt ``name`` with its placeholders filled; every placeholder needs a value."""
    if name not in PROMPTS:
        raise KeyError(f"no judge prompt {name!r}; known: {', '.join(PROMPTS)}")
    wanted = placeholders(name)
    missing = sorted(wanted - set(values))
    extra = sorted(set(values) - wanted)
    if missing or extra:
        raise ValueError(
            f"prompt {name}: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unexpected {', '.join(extra)}" if extra else "",
                )
                if part
            )
        )
    return PROMPTS[name].format_map(values)
