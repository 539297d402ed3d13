from django.urls import path

from lab.accounts import people, views

urlpatterns = [
    path("", views.account, name="account"),
    path("password/", people.PasswordChangeView.as_view(), name="account-password"),
    path("tokens/", views.tokens, name="account-tokens"),
    path("tokens/<int:pk>/revoke/", views.revoke, name="account-token-revoke"),
]
