"""The admin: a user's role is edited on the user's own page (an inline); tokens are listed and revoked."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from lab.accounts.forms import AdminLoginForm
from lab.accounts.models import ApiToken, Profile, role_of

User = get_user_model()

# The admin's login counts failures and refuses past the limit, as the lab's own does.
admin.site.login_form = AdminLoginForm


class ProfileInline(admin.StackedInline):
    model = Profile
    can_delete = False
    max_num = 1
    verbose_name = "role"
    verbose_name_plural = "role (staff users are instructors whatever this says)"


class LabUserAdmin(UserAdmin):
    inlines = (*UserAdmin.inlines, ProfileInline)
    list_display = (*UserAdmin.list_display, "role")
    list_filter = (*UserAdmin.list_filter, "profile__role")

    @admin.display(description="role")
    def role(self, user: object) -> str:
        return role_of(user)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, LabUserAdmin)


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "role")
    list_filter = ("role",)
    search_fields = ("user__username",)


@admin.action(description="Revoke the selected tokens")
def revoke_tokens(modeladmin: admin.ModelAdmin, request: object, queryset: object) -> None:
    for token in queryset:  # type: ignore[attr-defined]
        token.revoke()


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created", "last_used", "revoked")
    list_filter = ("revoked",)
    readonly_fields = ("prefix", "digest", "created", "last_used")
    search_fields = ("name", "user__username", "prefix")
    actions = (revoke_tokens,)

    def has_add_permission(self, request: object) -> bool:
        return False  # a token's secret is made once and shown once: make them at /account/tokens/
