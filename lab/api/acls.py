"""ACLs of a lab, as kafka-acls.sh manages them in ZooKeeper mode: list (all, or those that apply to a
topic, with who may do what to it), add, delete. Kept in ZooKeeper whether or not the brokers have an
authorizer; ``enforced`` says whether they do.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Status

from lab.api import driver
from lab.api.errors import ERRORS, LabTimeout
from lab.api.schemas import MAX_NAME, TOPIC_PATTERN, AclCreatedOut, AclIn, AclsDeletedOut, AclsOut

router = Router(tags=["acls"])


@router.get("/labs/{slug}/acls", response={200: AclsOut, **ERRORS}, summary="ACLs")
async def list_acls(
    request: HttpRequest,
    slug: str,
    topic: str | None = Query(
        None,
        min_length=1,
        max_length=MAX_NAME,
        pattern=TOPIC_PATTERN,
        description="only the ACLs that apply to this topic (literal, wildcard and prefixed), and who may do what",
    ),
) -> Any:
    args = {} if topic is None else {"topic": topic}
    answer = await driver.read(request, slug, "acls", args)
    return answer


@router.post("/labs/{slug}/acls", response={201: AclCreatedOut, **ERRORS}, summary="Add an ACL")
async def create_acl(request: HttpRequest, slug: str, body: AclIn) -> Any:
    """As kafka-acls.sh --add: an ACL Kafka refuses (Write on a Group, a Cluster not named
    kafka-cluster) is INVALID_REQUEST (409) and nothing is written. The brokers' authorizers read it a
    moment later."""
    answer = await driver.act(request, slug, "acl-create", body.dict(), save=True)
    if "acl" not in answer:
        raise LabTimeout(answer["message"])
    return Status(201, answer)


@router.delete("/labs/{slug}/acls", response={200: AclsDeletedOut, **ERRORS}, summary="Delete an ACL")
async def delete_acl(request: HttpRequest, slug: str, body: AclIn) -> Any:
    """As kafka-acls.sh --remove, for exactly this ACL; ``deleted`` is empty when there was none."""
    answer = await driver.act(request, slug, "acl-delete", body.dict(), save=True)
    if "deleted" not in answer:
        raise LabTimeout(answer["message"])
    return answer
