from django.urls import path

from lab.accounts import views

urlpatterns = [
    path("", views.account, name="account"),
    path("tokens/", views.tokens, name="account-tokens"),
    path("tokens/<int:pk>/revoke/", views.revoke, name="account-token-revoke"),
]
