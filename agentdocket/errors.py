"""The root of every error agentdocket raises on purpose.

:class:`AgentdocketError`'s message is for the person who ran the command or the program: it
names the problem and its place (a file and line, a request's member, a scorer's option). The
command line turns any of them into that one line and exit status 1, in one place
(``agentdocket.cli``); a program can catch them all with ``except AgentdocketError``. Each
keeps the standard base it had (``ValueError`` for bad input, ``RuntimeError`` for a store
that cannot work), so code that caught those still does.
"""

from __future__ import annotations


class AgentdocketError(Exception):
    """An error agentdocket raises on purpose, with a message for the user."""
