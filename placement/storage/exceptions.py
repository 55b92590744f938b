"""Storage-level failures, free of HTTP.

The API layer maps each class to a status (``placement.handlers.base``);
``message`` is the human-readable detail and ``code`` the Placement error
code clients see from microversion 1.23.
"""

from placement import error_codes as codes


class StorageError(Exception):
    code = codes.DEFAULT

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class NotFound(StorageError):
    """The thing named does not exist."""


class Conflict(StorageError):
    """The write cannot be applied to the current state."""


class ConcurrentUpdate(Conflict):
    """A generation did not match: somebody else wrote first."""
    code = codes.CONCURRENT_UPDATE


class Duplicate(Conflict):
    """A unique name or uuid is already taken."""
    code = codes.DUPLICATE_NAME


class InvalidInput(StorageError):
    """The values are well-formed but not acceptable (HTTP 400)."""


class ReadOnly(StorageError):
    """The object may not be changed (standard classes and traits)."""


class DatabaseUnavailable(StorageError):
    """The database cannot be reached now (HTTP 503)."""
