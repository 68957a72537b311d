"""Typed errors: one class per code of the server's closed set (``dev.troupe.model.ErrorCode``).

Every refusal of the server is JSON, ``{"error": CODE, "message": TEXT}`` (``reason`` with
``aborted``), and each code has exactly one HTTP status. The client raises the class of the code,
so callers write ``except PreconditionFailedError`` instead of comparing strings. ``retryable``
says whether the server did nothing and asks to be asked again later (429 and the 503 codes);
``outcome_unknown`` is retryable only with an idempotency key, which the client sends on every
write that accepts one.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping


class TroupeError(Exception):
    """A request the server refused (or that could not be made); the base of every error here."""

    code: ClassVar[str | None] = None
    """The JSON error code this class stands for (``None``: no code, e.g. a connection failure)."""
    retryable: ClassVar[bool] = False
    """The server did nothing and a later retry of the same request may succeed."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str | None = None,
        body: Mapping[str, Any] | None = None,
        retry_after_seconds: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        """The HTTP status (0 when no answer arrived)."""
        self.reason = reason
        """Only with ``aborted``: why, e.g. ``precondition_failed``, ``lock_conflict``."""
        self.body: Mapping[str, Any] = body if body is not None else {}
        """The whole error answer (``truncated`` carries ``origin`` and bounds)."""
        self.retry_after_seconds = retry_after_seconds
        """The answer's ``Retry-After``, when it had one."""

    @property
    def error(self) -> str | None:
        """The error code as the server sent it (for an unknown code too)."""
        value = self.body.get("error")
        return value if isinstance(value, str) else self.code

    def __str__(self) -> str:
        parts = [f"{self.status} {self.error}" if self.error else str(self.status)]
        if self.reason:
            parts.append(f"({self.reason})")
        parts.append(self.message)
        return " ".join(parts)


class ConnectionFailedError(TroupeError):
    """No answer: the connection failed or timed out (after the client's retries, if any)."""


class UnexpectedAnswerError(TroupeError):
    """An answer outside the contract: not JSON, or an error code the client does not know."""


class InvalidRequestError(TroupeError):
    code = "invalid_request"


class UnauthorizedError(TroupeError):
    code = "unauthorized"


class ForbiddenError(TroupeError):
    code = "forbidden"


class MethodNotAllowedError(TroupeError):
    code = "method_not_allowed"


class RequestTimeoutError(TroupeError):
    code = "request_timeout"


class UriTooLongError(TroupeError):
    code = "uri_too_long"


class HeadersTooLargeError(TroupeError):
    code = "headers_too_large"


class NotImplementedByServerError(TroupeError):
    """``not_implemented`` (named so as not to shadow Python's ``NotImplementedError``)."""

    code = "not_implemented"


class IncompatibleTypeError(TroupeError):
    code = "incompatible_type"


class IdempotencyKeyReusedError(TroupeError):
    code = "idempotency_key_reused"


class NotFoundError(TroupeError):
    code = "not_found"


class UnknownTypeError(TroupeError):
    code = "unknown_type"


class UnknownActionError(TroupeError):
    code = "unknown_action"


class HistoryTruncatedError(TroupeError):
    code = "history_truncated"


class TruncatedError(TroupeError):
    code = "truncated"


class PreconditionFailedError(TroupeError):
    code = "precondition_failed"


class AbortedError(TroupeError):
    """A transaction aborted and changed nothing; ``reason`` says why."""

    code = "aborted"


class ConflictError(TroupeError):
    code = "conflict"


class TooLargeError(TroupeError):
    code = "too_large"


class OverloadedError(TroupeError):
    code = "overloaded"
    retryable = True


class UnavailableError(TroupeError):
    code = "unavailable"
    retryable = True


class NotYetVisibleError(TroupeError):
    code = "not_yet_visible"
    retryable = True


class BootstrappingError(TroupeError):
    code = "bootstrapping"
    retryable = True


class NotHomeError(TroupeError):
    code = "not_home"


class NotOwnerError(TroupeError):
    code = "not_owner"
    retryable = True


class CorruptDataError(TroupeError):
    code = "corrupt_data"


class OutcomeUnknownError(TroupeError):
    """The server cannot tell whether the write took effect. Retried with the same idempotency key
    by the client (which then learns the outcome); raised only once the retries are used up."""

    code = "outcome_unknown"
    retryable = True


ERRORS_BY_CODE: Mapping[str, type[TroupeError]] = {
    error.code: error
    for error in (
        InvalidRequestError,
        UnauthorizedError,
        ForbiddenError,
        MethodNotAllowedError,
        RequestTimeoutError,
        UriTooLongError,
        HeadersTooLargeError,
        NotImplementedByServerError,
        IncompatibleTypeError,
        IdempotencyKeyReusedError,
        NotFoundError,
        UnknownTypeError,
        UnknownActionError,
        HistoryTruncatedError,
        TruncatedError,
        PreconditionFailedError,
        AbortedError,
        ConflictError,
        TooLargeError,
        OverloadedError,
        UnavailableError,
        NotYetVisibleError,
        BootstrappingError,
        NotHomeError,
        NotOwnerError,
        CorruptDataError,
        OutcomeUnknownError,
    )
    if error.code is not None
}
"""Every code of the server's closed set, to its class."""

STATUS_BY_CODE: Mapping[str, int] = {
    "invalid_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "uri_too_long": 414,
    "headers_too_large": 431,
    "not_implemented": 501,
    "incompatible_type": 409,
    "idempotency_key_reused": 422,
    "not_found": 404,
    "unknown_type": 404,
    "unknown_action": 404,
    "history_truncated": 410,
    "truncated": 410,
    "precondition_failed": 409,
    "aborted": 409,
    "conflict": 409,
    "too_large": 413,
    "overloaded": 429,
    "unavailable": 503,
    "not_yet_visible": 503,
    "bootstrapping": 503,
    "not_home": 421,
    "not_owner": 503,
    "corrupt_data": 500,
    "outcome_unknown": 500,
}
"""The HTTP status of each code, as the server's ErrorCode has it (checked by the tests)."""


def error_from_answer(
    status: int, body: Any, retry_after_seconds: float | None
) -> TroupeError:
    """The typed error for an error answer (its status and parsed JSON body, or None)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("error"), str):
        return UnexpectedAnswerError(
            f"an error answer without a JSON error code: {body!r}"[:500],
            status=status,
            retry_after_seconds=retry_after_seconds,
        )
    code = body["error"]
    message = body.get("message")
    reason = body.get("reason")
    error_class = ERRORS_BY_CODE.get(code, UnexpectedAnswerError)
    return error_class(
        message if isinstance(message, str) else code,
        status=status,
        reason=reason if isinstance(reason, str) else None,
        body=body,
        retry_after_seconds=retry_after_seconds,
    )
