"""Every error the API answers is JSON ``{"error": NAME, "message": "..."}``, with Kafka's name where one applies.

The HTTP code says what kind of mistake it was: 400 bad input (``INVALID_*``, ``ILLEGAL_ARGUMENT``, a
request that does not match the schema), 401 no or bad token, 403 not allowed, 404 unknown, 409 the
cluster's state refuses it (``NOT_ENOUGH_REPLICAS``, ``NON_EMPTY_GROUP``, ``ILLEGAL_STATE``...), 504 the
lab did not answer in time. Bad input never gets a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError

from lab.engine import errors as kafka
from lab.engine.errors import KafkaError
from lab.limits import PolicyViolation as PolicyViolation  # the lab's limits (labs, runs): 409

log = logging.getLogger(__name__)


class NotFound(KafkaError):
    """Something the request names does not exist (a broker, a scenario run) and Kafka has no name for it."""

    name = "NOT_FOUND"


class LabTimeout(KafkaError):
    """The lab's driver did not answer within the API's wait."""

    name = "REQUEST_TIMED_OUT"


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
NOT_FOUND: tuple[type[KafkaError], ...] = (kafka.UnknownTopicOrPartition, kafka.GroupIdNotFound, NotFound)
TIMED_OUT: tuple[type[KafkaError], ...] = (kafka.KafkaTimeout, kafka.RequestTimedOut, LabTimeout)

# Documented on every operation, so clients (and schemathesis) know the shape of each failure.
ERRORS: dict[int, Any] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    504: ErrorOut,
}


def status_of(error: KafkaError) -> int:
    if isinstance(error, BAD_INPUT):
        return 400
    if isinstance(error, NOT_FOUND):
        return 404
    if isinstance(error, TIMED_OUT):
        return 504
    # Everything else is the cluster's state refusing the request now (NOT_ENOUGH_REPLICAS,
    # NON_EMPTY_GROUP, ILLEGAL_STATE, TOPIC_ALREADY_EXISTS, a reassignment already in progress...).
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

    @api.exception_handler(KafkaError)
    def kafka_error(request: HttpRequest, exc: KafkaError) -> HttpResponse:
        return _json(api, request, status_of(exc), exc.name, exc.message)

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        fields = []
        for item in exc.errors:
            where, name = _field(item.get("loc"))
            fields.append({"field": name, "location": where, "problem": str(item.get("msg", "invalid"))})
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
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _json(api, request, 400, "INVALID_REQUEST", f"the request body is larger than {limit} bytes")

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
