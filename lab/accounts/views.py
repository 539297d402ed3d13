"""Your account: who you are and your role; your API tokens (create, shown once; revoke)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from lab import access
from lab.accounts.models import ApiToken, Role, role_of

ROLE_TEXT = {
    Role.STUDENT: "You see and change your own labs, and watch the demos you joined with a join code.",
    Role.INSTRUCTOR: "You run demos, see every student's labs and progress, and change your own labs.",
}


@require_GET
@login_required
def account(request: HttpRequest) -> HttpResponse:
    role = role_of(request.user)
    return render(
        request,
        "accounts/account.html",
        {
            "role": role,
            "role_text": ROLE_TEXT.get(role, ""),
            "labs": access.visible_labs(request.user).filter(owner=request.user).count(),
            "tokens": ApiToken.objects.filter(user=request.user, revoked__isnull=True).count(),
        },
    )


def _tokens_page(request: HttpRequest, *, status: int = 200, **extra: object) -> HttpResponse:
    context = {"tokens": ApiToken.objects.filter(user=request.user), "name": "", **extra}
    response = render(request, "accounts/tokens.html", context, status=status)
    return response


@never_cache  # the page that shows a secret must not be kept by a browser or a proxy
@require_http_methods(["GET", "POST"])
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """GET: your tokens. POST (name): a new token, its secret shown on this answer only."""
    if request.method == "GET":
        return _tokens_page(request)
    name = request.POST.get("name", "")
    try:
        token, secret = ApiToken.issue(request.user, name)
    except ValueError as error:
        return _tokens_page(request, status=400, name_error=str(error).capitalize() + ".", name=name[:100])
    return _tokens_page(request, status=201, created=token, secret=secret)


@require_POST
@login_required
def revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = ApiToken.objects.filter(pk=pk, user=request.user).first()
    if token is None:  # someone else's token or none: the same answer
        raise Http404("No such token.")
    if token.revoked is not None:
        messages.info(request, f"Token {token.name} ({token.prefix}…) was already revoked.")
    else:
        token.revoke()
        messages.success(request, f"Token {token.name} ({token.prefix}…) revoked: it no longer works.")
    return redirect("account-tokens")
