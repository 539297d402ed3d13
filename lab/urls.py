"""URL tables: ``urlpatterns`` for HTTP, ``websocket_urlpatterns`` for channels consumers."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from lab import consumers, views, views_lab
from lab.accounts import people
from lab.api.main import api

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("labs/new/", views.new_lab, name="lab-new"),
    path("labs/<slug:slug>/", views_lab.lab_page, name="lab"),
    path("labs/<slug:slug>/act/<slug:action>/", views_lab.act, name="lab-act"),
    path("labs/<slug:slug>/ca.pem", views_lab.lab_ca, name="lab-ca"),
    path("labs/<slug:slug>/delete/", views.delete_lab, name="lab-delete"),
    path("labs/<slug:slug>/admin/", include("lab.adminpanel.urls")),
    path("status/zookeeper/", views.zookeeper_status_card, name="zookeeper-status"),
    path("admin/", admin.site.urls),
    path("account/", include("lab.accounts.urls")),
    path("people/", people.people, name="people"),
    path("people/add/", people.add, name="people-add"),
    path("people/<str:username>/password/", people.reset_password, name="people-password"),
    path("people/<str:username>/role/", people.change_role, name="people-role"),
    path("people/<str:username>/active/", people.change_active, name="people-active"),
    path("api/", api.urls),
    path("", include("lab.classroom.urls")),
]

# Friendly pages instead of Django's bare ones (DEBUG is off for a class): lab/errors.py.
handler400 = "lab.errors.bad_request"
handler403 = "lab.errors.permission_denied"
handler404 = "lab.errors.page_not_found"
handler500 = "lab.errors.server_error"

websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/labs/<slug:slug>/", consumers.LabConsumer.as_asgi(), name="lab-ws"),
]
