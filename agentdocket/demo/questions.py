"""The demo's questions: each with its case (expected plan, calls, reference answer) and the
scripted agent's behaviour under each strategy, including its deliberate mistakes.

Reference answers are not written down: they are computed by running the expected queries
against the demo database and formatting the rows, exactly as the agent formats its own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentdocket.events import ArgumentRules, Case, Dataset, ExpectedCall

DATASET = "concerts-demo"
DATASET_VERSION = "1"

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True)
class Step:
    """One query the agent decides to run, and why; ``feeds`` when its rows go into the answer."""

    intent: str
    query: str
    feeds: bool = True


@dataclass(frozen=True)
class Question:
    case_id: str
    text: str
    question_type: Literal["conclusive", "interpretive"]
    queries: tuple[str, ...]  # what the case expects
    answer: Callable[[Sequence[Rows]], str]  # the answer from the rows of the feeding queries
    sequential: tuple[Step, ...]
    iterative: tuple[Step, ...]
    guess: str  # the no-interaction baseline's answer, from the records in its prompt


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _count(what: str) -> Callable[[Sequence[Rows]], str]:
    def answer(results: Sequence[Rows]) -> str:
        rows = results[0] if results else []
        if not rows:
            return f"I found no {what}."
        return f"{rows[0][0]} {what}."

    return answer


def _largest(results: Sequence[Rows]) -> str:
    (name, capacity), *_ = results[0]
    return f"{name} has the largest capacity, {_n(capacity)} seats."


def _average_age(results: Sequence[Rows]) -> str:
    return f"The average age of the singers who performed in 2023 is {results[0][0][0]}."


def _top_seller(results: Sequence[Rows]) -> str:
    (name, total), *_ = results[0]
    return f"{name} has the highest total song sales: {_n(total)} copies."


def _london(results: Sequence[Rows]) -> str:
    rows = results[0]
    if not rows:
        return "I found no concerts in London stadiums."
    return f"{rows[0][0]} concerts took place in London stadiums."


def _wembley(results: Sequence[Rows]) -> str:
    listed = ", ".join(f"{name} ({year})" for name, year in results[0])
    return f"Concerts at Wembley Stadium: {listed}." if listed else "I found no such concerts."


def _compare_years(results: Sequence[Rows]) -> str:
    if len(results) < 2:
        return f"There were {results[0][0][0]} concerts in 2023; I did not check 2022."
    a, b = results[0][0][0], results[1][0][0]
    more = "2023" if b > a else "2022" if a > b else "neither year"
    return f"There were {a} concerts in 2022 and {b} in 2023, so {more} had more."


def _countries(results: Sequence[Rows]) -> str:
    return "Countries with more than two singers: " + ", ".join(r[0] for r in results[0]) + "."


def _youngest(results: Sequence[Rows]) -> str:
    (name, age, country), *_ = results[0]
    text = f"The youngest singer is {name} ({age}, {country})."
    if len(results) < 2:
        return text + " I did not look up their concerts."
    concerts = "; ".join(f"{c} ({y}, {s})" for c, y, s in results[1])
    n = len(results[1])
    return text + f" They performed in {n} concert{'s' if n != 1 else ''}: {concerts}."


def _sales_by_year(results: Sequence[Rows]) -> str:
    rows = results[0]
    best = max(rows, key=lambda r: r[1])
    listed = "; ".join(f"{y}: {_n(s)}" for y, s in rows)
    return f"Total song sales by year: {listed}. Sales peaked in {best[0]}."


Q_FRANCE = "SELECT count(*) FROM singer WHERE country = 'France'"
Q_LARGEST = "SELECT name, capacity FROM stadium ORDER BY capacity DESC LIMIT 1"
Q_AGE_2023 = (
    "SELECT round(avg(age), 1) FROM singer WHERE singer_id IN (SELECT sc.singer_id "
    "FROM singer_in_concert sc JOIN concert c ON c.concert_id = sc.concert_id "
    "WHERE c.year = 2023)"
)
Q_TOP_SELLER = (
    "SELECT s.name, sum(so.sales) AS total FROM singer s JOIN song so ON so.singer_id = "
    "s.singer_id GROUP BY s.singer_id ORDER BY total DESC LIMIT 1"
)
Q_LONDON = (
    "SELECT count(*) FROM concert c JOIN stadium s ON s.stadium_id = c.stadium_id "
    "WHERE s.location = 'London'"
)
Q_WEMBLEY = (
    "SELECT c.name, c.year FROM concert c JOIN stadium s ON s.stadium_id = c.stadium_id "
    "WHERE s.name = 'Wembley Stadium' ORDER BY c.year"
)
Q_2022 = "SELECT count(*) FROM concert WHERE year = 2022"
Q_2023 = "SELECT count(*) FROM concert WHERE year = 2023"
Q_COUNTRIES = "SELECT country FROM singer GROUP BY country HAVING count(*) > 2 ORDER BY country"
Q_YOUNGEST = "SELECT name, age, country FROM singer ORDER BY age LIMIT 1"
Q_YOUNGEST_CONCERTS = (
    "SELECT c.name, c.year, st.name FROM concert c JOIN singer_in_concert sc ON "
    "sc.concert_id = c.concert_id JOIN stadium st ON st.stadium_id = c.stadium_id WHERE "
    "sc.singer_id = (SELECT singer_id FROM singer ORDER BY age LIMIT 1) ORDER BY c.year"
)
Q_SALES = "SELECT year, sum(sales) FROM song GROUP BY year ORDER BY year"

QUESTIONS: tuple[Question, ...] = (
    Question(
        "q01",
        "How many singers are from France?",
        "conclusive",
        (Q_FRANCE,),
        _count("singers are from France"),
        (Step("Count the singers whose country is France", Q_FRANCE),),
        (Step("Count the singers from France", Q_FRANCE),),
        "4 singers are from France.",
    ),
    Question(
        "q02",
        "Which stadium has the largest capacity?",
        "conclusive",
        (Q_LARGEST,),
        _largest,
        (Step("Find the stadium with the highest capacity", Q_LARGEST),),
        (  # sorts the wrong way round: finds the smallest stadium
            Step(
                "Find the stadium by capacity",
                "SELECT name, capacity FROM stadium ORDER BY capacity LIMIT 1",
            ),
        ),
        "Estadio Azteca has the largest capacity, 87,523 seats.",
    ),
    Question(
        "q03",
        "What is the average age of the singers who performed in 2023?",
        "conclusive",
        (Q_AGE_2023,),
        _average_age,
        (  # first guesses a column that does not exist, then corrects itself
            Step(
                "Average the age of singers in concerts of 2023",
                Q_AGE_2023.replace("c.year", "c.concert_year"),
                feeds=False,
            ),
            Step("Retry with the concert table's year column", Q_AGE_2023),
        ),
        (Step("Average the age of singers who performed in 2023", Q_AGE_2023),),
        "The average age of the singers who performed in 2023 is about 35.",
    ),
    Question(
        "q04",
        "Which singer has the highest total song sales?",
        "conclusive",
        (Q_TOP_SELLER,),
        _top_seller,
        (Step("Sum song sales per singer and take the highest", Q_TOP_SELLER),),
        (  # takes the best-selling single song instead of the total
            Step(
                "Find the best-selling singer",
                "SELECT s.name, max(so.sales) FROM singer s JOIN song so ON so.singer_id = "
                "s.singer_id",
            ),
        ),
        "Sofia Reyes has the highest total song sales: 620,000 copies.",
    ),
    Question(
        "q05",
        "How many concerts took place in London stadiums?",
        "conclusive",
        (Q_LONDON,),
        _london,
        (Step("Count concerts whose stadium is located in London", Q_LONDON),),
        (  # lower-case 'london' matches nothing: an empty result
            Step(
                "List concerts in London stadiums",
                "SELECT c.name FROM concert c JOIN stadium s ON s.stadium_id = c.stadium_id "
                "WHERE s.location = 'london'",
            ),
        ),
        "3 concerts took place in London stadiums.",
    ),
    Question(
        "q06",
        "List the concerts held at Wembley Stadium with their year.",
        "conclusive",
        (Q_WEMBLEY,),
        _wembley,
        (  # a different query (LIKE) with the same rows
            Step(
                "List concerts at Wembley with their year",
                Q_WEMBLEY.replace("s.name = 'Wembley Stadium'", "s.name LIKE 'Wembley%'"),
            ),
        ),
        (Step("List concerts at Wembley Stadium", Q_WEMBLEY),),
        "Concerts at Wembley Stadium: Summer Lights (2022), London Calling (2023).",
    ),
    Question(
        "q07",
        "Were there more concerts in 2022 or in 2023?",
        "conclusive",
        (Q_2022, Q_2023),
        _compare_years,
        (Step("Count concerts in 2022", Q_2022), Step("Count concerts in 2023", Q_2023)),
        (Step("Count concerts in 2023", Q_2023),),  # stops before checking 2022
        "There were 5 concerts in 2022 and 6 in 2023, so 2023 had more.",
    ),
    Question(
        "q08",
        "Which countries have more than two singers?",
        "conclusive",
        (Q_COUNTRIES,),
        _countries,
        (  # off by one: at least two
            Step(
                "Group singers by country and keep countries with more than two",
                Q_COUNTRIES.replace("> 2", ">= 2"),
            ),
        ),
        (Step("Countries with more than two singers", Q_COUNTRIES),),
        "Countries with more than two singers: France, Sweden, United Kingdom.",
    ),
    Question(
        "q09",
        "Describe the concert activity of the youngest singer.",
        "interpretive",
        (Q_YOUNGEST, Q_YOUNGEST_CONCERTS),
        _youngest,
        (
            Step("Find the youngest singer", Q_YOUNGEST),
            Step("List the concerts of the youngest singer", Q_YOUNGEST_CONCERTS),
        ),
        (Step("Find the youngest singer", Q_YOUNGEST),),  # stops after the first query
        "The youngest singer is Noah Becker (21, Germany), who mostly performs in Berlin.",
    ),
    Question(
        "q10",
        "How did total song sales change from year to year?",
        "interpretive",
        (Q_SALES,),
        _sales_by_year,
        (Step("Sum song sales per year", Q_SALES),),
        (Step("Total sales per year", Q_SALES),),
        "Song sales grew steadily every year.",
    ),
)

SQL_RULES = ArgumentRules(normalize={"query": ["strip", "casefold"]}, tools=["sql"])


def expected_plan(question: Question) -> list[str]:
    return ["sql"] * len(question.queries) + ["answer"]


def dataset(conn: sqlite3.Connection) -> Dataset:
    """The demo's cases, reference answers computed from the database."""
    cases = []
    for q in QUESTIONS:
        results = [conn.execute(query).fetchall() for query in q.queries]
        cases.append(
            Case(
                case_id=q.case_id,
                question=q.text,
                question_type=q.question_type,
                expected_plan=expected_plan(q),
                expected_calls=[ExpectedCall("sql", {"query": query}) for query in q.queries],
                argument_rules=[SQL_RULES],
                reference_answer=q.answer(results),
            )
        )
    return Dataset(
        DATASET,
        DATASET_VERSION,
        tuple(cases),
        "Questions over the demo's concerts database (agentdocket demo)",
    )
