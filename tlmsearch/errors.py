"""Exceptions that carry a message meant for a person.

`UserError` marks bad input from a user (a config value, a CLI flag, a file): the CLI prints
its message as one line and exits with status 2, without a traceback. Anything else is a bug
and keeps its traceback. `UserError` subclasses `ValueError`, so library callers may catch
either.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input from a user; the message says what was wrong and what is allowed."""


class ConfigError(UserError):
    """A configuration value is invalid."""


class DataError(UserError):
    """A corpus, tokenizer or data file is missing, unreadable or malformed."""
