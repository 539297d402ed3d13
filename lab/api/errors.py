"""Every error the API answers is JSON ``{"error": NAME, "message": "..."}``, with Kafka's name where one applies.

The HTTP code says what kind of mistake it was: 400 the request does not match its schema
(``INVALID_REQUEST`` with the field, ``INVALID_CONFIG`` for a config value), found before the lab is
asked; 401 no or bad token, 403 not allowed, 404 unknown; 409 a well-formed request the lab's cluster
refuses in its current state, with Kafka's name (``INVALID_REPLICATION_FACTOR`` above the lab's brokers,
``INVALID_PARTITIONS`` below the topic's count, ``OFFSET_OUT_OF_RANGE``, ``NOT_ENOUGH_REPLICAS``,
``NON_EMPTY_GROUP``, ``ILLEGAL_STATE``...); 413 a body too large to read; 503 the lab cannot reach ZooKeeper and the call needs it
(``ZOOKEEPER_NOT_AVAILABLE``, with ``Retry-After``); 504 the lab did not answer in time. Bad input never gets a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError

from lab.engine import errors as kafka
from lab.engine import limits
from lab.engine.errors import KafkaError
from lab.engine.errors import PolicyViolation as PolicyViolation  # too many labs or runs: a 409
from lab.request_size import declared_size, too_large_message
from lab.runtime.actions import NotFound as NotFound  # a broker, a produce request, a run: a 404

log = logging.getLogger(__name__)


class LabTimeout(KafkaError):
    """The lab's driver did not answer within the API's wait."""

    name = "REQUEST_TIMED_OUT"


class Refused(Exception):
    """A Kafka error the lab's cluster answered with: the request was well formed, the cluster's state
    refuses it. Never a 400 (the schema would have said so): 404 for what does not exist, else 409."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(str(error))
        self.error = error


class ErrorOut(Schema):
    error: str
    message: str
    fields: list[dict[str, str]] | None = None


BAD_INPUT: tuple[type[KafkaError], ...] = (
    kafka.IllegalArgument,
    kafka.InvalidTopic,
    kafka.InvalidPartitions,
    kafka.InvalidReplicationFactor,
    kafka.InvalidReplicaAssignment,
    kafka.InvalidConfig,
    kafka.InvalidGroupId,
    kafka.InvalidRecord,
    kafka.RecordTooLarge,
    kafka.OffsetOutOfRange,
    kafka.UnsupportedCompressionType,
)
NOT_FOUND: tuple[type[KafkaError], ...] = (
    kafka.UnknownTopicOrPartition,
    kafka.GroupIdNotFound,
    kafka.ResourceNotFound,
    NotFound,
)
TIMED_OUT: tuple[type[KafkaError], ...] = (kafka.KafkaTimeout, kafka.RequestTimedOut, LabTimeout)
RETRY_AFTER_S = 2  # what a 503 tells a client to wait: the managed ZooKeeper's first restarts come sooner

# Documented on every operation, so clients (and schemathesis) know the shape of each failure.
ERRORS: dict[int, Any] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    503: ErrorOut,
    504: ErrorOut,
}


def status_of(error: KafkaError, *, from_lab: bool = False) -> int:
    if isinstance(error, NOT_FOUND):
        return 404
    if isinstance(error, kafka.ZooKeeperNotAvailable):
        return 503
    if isinstance(error, TIMED_OUT):
        return 504
    if isinstance(error, BAD_INPUT) and not from_lab:
        return 400
    # Everything else is the cluster's state refusing the request now (NOT_ENOUGH_REPLICAS,
    # NON_EMPTY_GROUP, ILLEGAL_STATE, TOPIC_ALREADY_EXISTS, a reassignment already in progress,
    # a replication factor above the lab's brokers...).
    return 409


def _json(
    api: NinjaAPI, request: HttpRequest, status: int, error: str, message: str, **extra: Any
) -> HttpResponse:
    return api.create_response(request, {"error": error, "message": message, **extra}, status=status)


def _field(loc: Any) -> tuple[str, str]:
    """Where (body, query, path) and which field, from ninja's location: ("body", "body", "partitions")."""
    parts = [str(p) for p in (loc or ())]
    where = parts[0] if parts else "request"
    if where == "body" and len(parts) > 2:
        parts = parts[1:]  # the body parameter's own name says nothing to a client
    return where, ".".join(parts[1:]) or where


def install(api: NinjaAPI) -> None:
    """Replace ninja's default handlers (422 with pydantic's list, HTML 404s, tracebacks) with ours."""

    def answer(request: HttpRequest, error: KafkaError, status: int) -> HttpResponse:
        response = _json(api, request, status, error.name, error.message)
        if status == 503:
            response["Retry-After"] = str(RETRY_AFTER_S)
        return response

    @api.exception_handler(KafkaError)
    def kafka_error(request: HttpRequest, exc: KafkaError) -> HttpResponse:
        return answer(request, exc, status_of(exc))

    @api.exception_handler(Refused)
    def refused(request: HttpRequest, exc: Refused) -> HttpResponse:
        return answer(request, exc.error, status_of(exc.error, from_lab=True))

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        fields = []
        for item in exc.errors:
            where, name = _field(item.get("loc"))
            problem = _problem(item)
            fields.append({"field": name, "location": where, "problem": problem})
        message = "; ".join(f"{f['field']}: {f['problem']}" for f in fields) or "the request is malformed"
        return _json(api, request, 400, "INVALID_REQUEST", message, fields=fields)

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        response = _json(
            api,
            request,
            401,
            "UNAUTHORIZED",
            "Send a valid API token: 'Authorization: Bearer klab_...' (make one at /account/tokens/).",
        )
        response["WWW-Authenticate"] = 'Bearer realm="kafka-lab"'
        return response

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        name = {400: "INVALID_REQUEST", 403: "FORBIDDEN", 404: "NOT_FOUND", 429: "THROTTLED"}.get(
            exc.status_code, "INVALID_REQUEST"
        )
        return _json(api, request, exc.status_code, name, str(exc))

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return _json(api, request, 404, "NOT_FOUND", str(exc) or "Not found.")

    @api.exception_handler(RequestDataTooBig)
    def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        return _json(api, request, 413, "INVALID_REQUEST", too_large_message(declared_size(request)))

    @api.exception_handler(PermissionDenied)
    def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
        return _json(api, request, 403, "FORBIDDEN", str(exc) or "You may not do this.")

    @api.exception_handler(Exception)
    def bug(request: HttpRequest, exc: Exception) -> HttpResponse:
        # Not a person's mistake: log it with its traceback and say so, as JSON.
        log.exception("API %s %s failed", request.method, request.path)
        return _json(
            api, request, 500, "UNKNOWN_SERVER_ERROR", "The lab failed on this request; see its log."
        )


def _problem(item: dict[str, Any]) -> str:
    """What is wrong with one field, in words: a pattern the lab's limits know is said as their rule."""
    if item.get("type") == "string_pattern_mismatch":
        limit = limits.text_with_pattern(str((item.get("ctx") or {}).get("pattern", "")))
        if limit is not None:
            return limit.rule  # after the field's name: "group: is printable text, not only spaces"
    return str(item.get("msg", "invalid")).removeprefix("Value error, ")
