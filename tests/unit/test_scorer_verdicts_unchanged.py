"""The rule scorers' verdicts stay byte for byte what they were: every verdict event (all of it
but its time: id, span, payload with its input hash and details in their order) that
planner.suffix_match, tools.slot_fill, tools.procedural and interaction.metrics give over
bench/scoring.py's synthetic traces and over the IBM coalitions study's runs (../shared, never
committed), hashed (tests/helpers/verdict_digests.py) and compared with recorded digests.

The digests were recorded from commit 6476193 (before the scorers' per-trace work was made
faster). A deliberate change of a verdict (a new scorer version) records them again:

    python -m tests.helpers.verdict_digests
"""

from __future__ import annotations

import pytest

from tests.helpers import verdict_digests
from tests.helpers.db import require_shared

# Recorded from commit 6476193.
SYNTHETIC_5K = {
    "planner.suffix_match": "c1b212cdacad426da599d8cf505a84b39c4aceb8434356b0bbf2e21d9348d1cd",
    "tools.slot_fill": "8e77ce27c4f6eef325933f49c19d0c5d8ed173be8dd1186e7cfdc3be02b8772e",
    "tools.procedural": "5e30ca5c3e32b2265ad58b1ed4a471a64233e4d0388fa78c4b8fe23a96652aea",
    "interaction.metrics": "f56d0c995be0e7d442a7f6314f7a7bef082fa7d82c048743dee345511f69e3b3",
}
SYNTHETIC_100K = {
    "planner.suffix_match": "f2a8a15659f107d8df7ff1285e2d5506466a243d49250b698352e1d533c25a71",
    "tools.slot_fill": "b158739bed8453678bfa78e08c21d3e08f426da6451aa4bbf13d87f2a9c9991d",
    "tools.procedural": "958c5846a74fbbb4a8f2e328d79788e6af3a4b87d44a68638b9fe87d1acaaccc",
    "interaction.metrics": "35527fa2c4068974f17d7138f84c70f2006e2ab18ea6fd12d5a0d71b8107d6ff",
}
IBM = {
    "planner.suffix_match": "fc10033cfaded97fb5d8cf8d109626e430d618b5b3dbd2a7cf9d62159ceb8888",
    "tools.slot_fill": "1fa9f2d9eb1c5977c94d0b4d0a565af1a7e72e6e949e9b57b1d4dea1d172dd49",
    "tools.procedural": "3ebe19f920320eeffa4f33ab853024e5c4aff948729352c7073f54bed1f8df78",
    "interaction.metrics": "357725df3d2bed75868df800aa50828365392985b561ffe32aba15eb35a125bc",
}


def test_verdicts_on_5k_synthetic_traces_are_unchanged() -> None:
    assert verdict_digests.synthetic(5000) == SYNTHETIC_5K


@pytest.mark.slow
def test_verdicts_on_100k_synthetic_traces_are_unchanged() -> None:
    assert verdict_digests.synthetic(100_000) == SYNTHETIC_100K


def test_verdicts_on_the_ibm_study_are_unchanged() -> None:
    require_shared(verdict_digests.IBM)
    assert verdict_digests.ibm() == IBM
