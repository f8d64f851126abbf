"""GRAMMAR-Gen templates over the demo's concerts database, for the tests and the docs'
examples."""

TWO = (  # two placeholders: a Cartesian product
    "SELECT title FROM song JOIN singer USING (singer_id) "
    "WHERE singer.name = '[singer.name]' AND song.year = [song.year];"
)
SQL = f"""\
# one placeholder
SELECT age FROM singer WHERE name = '[singer.name]';
SELECT capacity FROM stadium WHERE location = '[stadium.location]';
SELECT name FROM singer WHERE country = '[singer.country]';
{TWO}
"""
TEXT = f"""\
"SELECT age FROM singer WHERE name = '[singer.name]';":
  - How old is [singer.name]?
  - What is the age of the singer [singer.name]?
"SELECT capacity FROM stadium WHERE location = '[stadium.location]';":
  - How many people fit in the stadium in [stadium.location]?
"SELECT name FROM singer WHERE country = '[singer.country]';":
  - Which singer comes from [singer.country]?
"{TWO}":
  - Which song did [singer.name] release in [song.year]?
"""
