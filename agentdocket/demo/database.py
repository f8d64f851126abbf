"""The demo's own database: a Spider-like concerts schema, five tables, about a hundred rows.

Built from the literal data below, so every build is identical.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE stadium (
    stadium_id INTEGER PRIMARY KEY, name TEXT NOT NULL, location TEXT NOT NULL,
    capacity INTEGER NOT NULL, opened INTEGER NOT NULL
);
CREATE TABLE singer (
    singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL,
    age INTEGER NOT NULL, genre TEXT NOT NULL
);
CREATE TABLE concert (
    concert_id INTEGER PRIMARY KEY, name TEXT NOT NULL, theme TEXT NOT NULL,
    stadium_id INTEGER NOT NULL REFERENCES stadium, year INTEGER NOT NULL
);
CREATE TABLE singer_in_concert (
    concert_id INTEGER NOT NULL REFERENCES concert, singer_id INTEGER NOT NULL REFERENCES singer,
    PRIMARY KEY (concert_id, singer_id)
);
CREATE TABLE song (
    song_id INTEGER PRIMARY KEY, singer_id INTEGER NOT NULL REFERENCES singer,
    title TEXT NOT NULL, year INTEGER NOT NULL, sales INTEGER NOT NULL
);
"""

STADIUMS = [
    (1, "Wembley Stadium", "London", 90000, 2007),
    (2, "Stade de France", "Paris", 81338, 1998),
    (3, "Olympiastadion", "Berlin", 74475, 1936),
    (4, "Estadio Azteca", "Mexico City", 87523, 1966),
    (5, "Tottenham Hotspur Stadium", "London", 62850, 2019),
    (6, "Johan Cruijff ArenA", "Amsterdam", 55500, 1996),
    (7, "Friends Arena", "Stockholm", 50000, 2012),
    (8, "Estadio Metropolitano", "Madrid", 70460, 2017),
]

SINGERS = [
    (1, "Joeline Armand", "France", 29, "pop"),
    (2, "Mathis Leclerc", "France", 41, "chanson"),
    (3, "Ines Marchal", "France", 23, "electro"),
    (4, "Paul Vidal", "France", 35, "rock"),
    (5, "Greta Lindqvist", "Sweden", 31, "pop"),
    (6, "Oskar Berg", "Sweden", 52, "jazz"),
    (7, "Amelia Hart", "United Kingdom", 27, "pop"),
    (8, "Tom Whitaker", "United Kingdom", 45, "rock"),
    (9, "Priya Kaur", "United Kingdom", 33, "soul"),
    (10, "Lena Vogel", "Germany", 38, "electro"),
    (11, "Jonas Richter", "Germany", 26, "rock"),
    (12, "Lucia Ortega", "Spain", 30, "flamenco"),
    (13, "Diego Santos", "Spain", 47, "pop"),
    (14, "Sofia Reyes", "Mexico", 24, "pop"),
    (15, "Mateo Cruz", "Mexico", 36, "ranchera"),
    (16, "Daan de Vries", "Netherlands", 28, "electro"),
    (17, "Femke Jansen", "Netherlands", 40, "jazz"),
    (18, "Noah Becker", "Germany", 21, "hip hop"),
    (19, "Elsa Nyberg", "Sweden", 34, "folk"),
    (20, "Carmen Vidal", "Spain", 58, "chanson"),
]

CONCERTS = [
    (1, "Summer Lights", "pop night", 1, 2022),
    (2, "Nuit Electro", "electronic", 2, 2022),
    (3, "Rock the Ring", "rock", 3, 2022),
    (4, "Fiesta Grande", "latin", 4, 2022),
    (5, "Jazz by the Canal", "jazz", 6, 2022),
    (6, "Northern Voices", "folk", 7, 2023),
    (7, "London Calling", "rock", 5, 2023),
    (8, "Paris Pop", "pop night", 2, 2023),
    (9, "Madrid Live", "latin", 8, 2023),
    (10, "Berlin Beats", "electronic", 3, 2023),
    (11, "Wembley Soul", "soul", 1, 2023),
    (12, "Azteca Nights", "latin", 4, 2024),
    (13, "Amsterdam Sessions", "jazz", 6, 2024),
    (14, "Stockholm Pop", "pop night", 7, 2024),
]

SINGER_IN_CONCERT = [
    (1, 1),
    (1, 5),
    (1, 7),
    (2, 3),
    (2, 10),
    (2, 16),
    (3, 4),
    (3, 8),
    (3, 11),
    (4, 12),
    (4, 14),
    (4, 15),
    (5, 6),
    (5, 17),
    (6, 19),
    (6, 5),
    (6, 6),
    (7, 8),
    (7, 11),
    (7, 7),
    (8, 1),
    (8, 3),
    (8, 13),
    (9, 12),
    (9, 13),
    (9, 20),
    (10, 10),
    (10, 18),
    (10, 16),
    (11, 9),
    (11, 7),
    (12, 14),
    (12, 15),
    (13, 17),
    (13, 6),
    (14, 5),
    (14, 19),
]

SONGS = [
    (1, 1, "Lumière", 2019, 120000),
    (2, 1, "Minuit", 2021, 210000),
    (3, 2, "La Route", 2019, 90000),
    (4, 3, "Pulse", 2022, 150000),
    (5, 4, "Béton", 2020, 60000),
    (6, 5, "Northern Star", 2020, 300000),
    (7, 5, "Glass", 2022, 260000),
    (8, 6, "Blue Hour", 2019, 40000),
    (9, 7, "Paper Hearts", 2021, 410000),
    (10, 7, "Runaway Train", 2023, 380000),
    (11, 8, "Iron Road", 2020, 95000),
    (12, 9, "Slow Burn", 2022, 175000),
    (13, 10, "Kraftfeld", 2021, 130000),
    (14, 11, "Garage", 2023, 70000),
    (15, 12, "Alma", 2020, 110000),
    (16, 13, "Verano", 2019, 230000),
    (17, 14, "Cielo", 2022, 290000),
    (18, 14, "Luna Roja", 2023, 330000),
    (19, 15, "Caminos", 2021, 85000),
    (20, 16, "Polder", 2022, 99000),
    (21, 17, "Nachtvlinder", 2020, 45000),
    (22, 18, "Block", 2023, 160000),
    (23, 19, "Frost", 2021, 55000),
    (24, 20, "Recuerdos", 2019, 75000),
]

TABLES: dict[str, Sequence[tuple[Any, ...]]] = {
    "stadium": STADIUMS,
    "singer": SINGERS,
    "concert": CONCERTS,
    "singer_in_concert": SINGER_IN_CONCERT,
    "song": SONGS,
}


def build(path: Path) -> Path:
    """Create the demo database at ``path`` (replacing any file there); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SCHEMA)
        for table, rows in TABLES.items():
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        conn.commit()
    finally:
        conn.close()
    return path


def schema_text(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each table's column names, read from the database itself."""
    tables = [
        r[0]
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}


def dump(conn: sqlite3.Connection) -> str:
    """Every record of every table as text (the no-interaction baseline's prompt context)."""
    lines = []
    for table, columns in schema_text(conn).items():
        lines.append(f"{table}({', '.join(columns)})")
        for row in conn.execute(f"SELECT * FROM {table}"):
            lines.append("  " + " | ".join(str(v) for v in row))
    return "\n".join(lines)
