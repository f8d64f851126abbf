"""A scripted database-QA agent, recorded through the tracer like any instrumented agent.

It has no language model: its "planner", "slot filler" and "response former" follow the scripts
in :mod:`agentdocket.demo.questions` (the model is named ``scripted``), but everything else is
real. It retrieves the tables relevant to the question, executes its SQL against the demo
database, and builds its answer from the rows it got back, in the three strategies of the
database-QA study: sequential (plan, then all queries, then answer), iterative (one planned step
and one query at a time until it stops) and no-interaction (the whole database in the prompt,
no SQL).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from agentdocket.demo.database import dump, schema_text
from agentdocket.demo.questions import DATASET, DATASET_VERSION, Question, Rows, Step
from agentdocket.events import PlanStep
from agentdocket.tracer import Run, Tracer

AGENT = "concerts-qa"
AGENT_VERSION = "1.0"
MODEL = "scripted"
STRATEGIES = ("sequential", "iterative", "no-interaction")

SYSTEM = "You answer questions about a concerts database. Be precise and complete."
FAILED = "I could not answer: a database query failed."


class ConcertsAgent:
    def __init__(self, database: Path, tracer: Tracer) -> None:
        self.conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        self.tracer = tracer
        self.schema = schema_text(self.conn)

    def close(self) -> None:
        self.conn.close()

    def answer(self, question: Question, strategy: str) -> tuple[str | None, str]:
        """Answer ``question`` with ``strategy``; return the run's trace id and the answer."""
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
        with self.tracer.run(
            AGENT,
            agent_version=AGENT_VERSION,
            question=question.text,
            case=question.case_id,
            dataset=DATASET,
            dataset_version=DATASET_VERSION,
            strategy=strategy,
            models={"planner": MODEL, "slot_filler": MODEL, "response_former": MODEL},
            # each strategy a selection of its own: `compare --baseline experiment:sequential`
            attributes={"experiment": strategy},
        ) as run:
            run.message("user", question.text)
            if strategy == "no-interaction":
                text = self._no_interaction(run, question)
            else:
                tables = self._relevant_tables(run, question.text)
                if strategy == "sequential":
                    results = self._sequential(run, question, tables)
                else:
                    results = self._iterative(run, question, tables)
                text = self._respond(run, question, results)
            run.respond(text)
        return run.trace_id, text

    # --- strategies -----------------------------------------------------------------------------

    def _sequential(self, run: Run, q: Question, tables: list[str]) -> list[Rows | None]:
        plan = [PlanStep(tool="sql", text=s.intent) for s in q.sequential]
        plan.append(PlanStep(tool="answer", text="Answer from the query results"))
        plan_text = "\n".join(f"{i}. {s.text}" for i, s in enumerate(plan, 1))
        _llm_call(
            run,
            MODEL,
            "planner",
            [("system", SYSTEM), ("user", self._planner_prompt(q.text, tables))],
            output=plan_text,
            temperature=0.0,
        )
        run.plan(plan, text=plan_text)
        return [rows for step, rows in self._execute(run, q.sequential, tables) if step.feeds]

    def _iterative(self, run: Run, q: Question, tables: list[str]) -> list[Rows | None]:
        results: list[Rows | None] = []
        history: list[str] = []
        for step in q.iterative:
            prompt = self._planner_prompt(q.text, tables) + _history(history)
            _llm_call(
                run, MODEL, "planner", [("user", prompt)], output=step.intent, temperature=0.0
            )
            run.plan([PlanStep(tool="sql", text=step.intent)], text=step.intent)
            ((_, rows),) = self._execute(run, (step,), tables)
            history.append(f"{step.query} -> {rows if rows is not None else 'error'}")
            if step.feeds:
                results.append(rows)
        prompt = self._planner_prompt(q.text, tables) + _history(history)
        _llm_call(run, MODEL, "planner", [("user", prompt)], output="STOP", temperature=0.0)
        run.plan([PlanStep(tool="answer", text="Stop and answer")], text="STOP")
        return results

    def _no_interaction(self, run: Run, q: Question) -> str:
        prompt = (
            "Answer the question from these records. Think step by step.\n\n"
            f"{dump(self.conn)}\n\nQuestion: {q.text}"
        )
        _llm_call(
            run, MODEL, "response_former", [("system", SYSTEM), ("user", prompt)], output=q.guess
        )
        return q.guess

    # --- steps ----------------------------------------------------------------------------------

    def _relevant_tables(self, run: Run, question: str) -> list[str]:
        """Retrieve the tables whose names or columns share words with the question."""
        words = {_stem(w) for w in re.findall(r"[a-z]+", question.lower())}
        scored = []
        for table, columns in self.schema.items():
            vocabulary = {_stem(p) for name in [table, *columns] for p in name.split("_")}
            overlap = len(words & vocabulary)
            if overlap:
                scored.append((table, overlap / len(vocabulary), columns))
        scored.sort(key=lambda t: (-t[1], t[0]))
        run.retrieval(
            question,
            [{"id": t, "score": round(s, 4), "text": f"{t}({', '.join(c)})"} for t, s, c in scored],
        )
        return [t for t, _, _ in scored] or list(self.schema)

    def _execute(
        self, run: Run, steps: Sequence[Step], tables: list[str]
    ) -> list[tuple[Step, Rows | None]]:
        out: list[tuple[Step, Rows | None]] = []
        for step in steps:
            _llm_call(
                run,
                MODEL,
                "slot_filler",
                [
                    (
                        "user",
                        f"Tables: {', '.join(tables)}\nWrite one SQLite query to: {step.intent}",
                    )
                ],
                output=step.query,
                temperature=0.0,
            )
            rows: Rows | None
            try:
                with run.tool_call("sql", {"query": step.query}) as call:
                    rows = run.execute_sql(self.conn, step.query, database="concerts")
                    call.result([list(r) for r in rows])
            except sqlite3.Error:
                rows = None
            out.append((step, rows))
        return out

    def _respond(self, run: Run, q: Question, results: list[Rows | None]) -> str:
        if any(r is None for r in results) or not results:
            text = FAILED
        else:
            text = q.answer([r for r in results if r is not None])
        _llm_call(
            run,
            MODEL,
            "response_former",
            [("user", f"Question: {q.text}\nResults: {results}\nAnswer concisely.")],
            output=text,
            temperature=0.0,
        )
        return text

    def _planner_prompt(self, question: str, tables: list[str]) -> str:
        schema = "\n".join(f"{t}({', '.join(self.schema[t])})" for t in tables)
        return f"Schema:\n{schema}\n\nQuestion: {question}\nPlan the queries you need."


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _history(history: list[str]) -> str:
    return ("\n\nSo far:\n" + "\n".join(history)) if history else ""


WORD = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> int:
    """The scripted model's own count of a text's tokens: its words and punctuation marks
    (about what a BPE tokenizer gives for English prose), reported as its usage."""
    return len(WORD.findall(text))


def _llm_call(
    run: Run,
    model: str,
    role: str,
    messages: list[tuple[str, str]],
    *,
    output: str,
    temperature: float | None = None,
) -> None:
    """A call of the scripted model, with the tokens it counts in and out."""
    run.llm_call(
        model,
        role,
        messages,
        output=output,
        temperature=temperature,
        input_tokens=sum(tokens(text) for _, text in messages),
        output_tokens=tokens(str(output)),
    )
