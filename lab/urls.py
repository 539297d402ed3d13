"""URL tables: ``urlpatterns`` for HTTP, ``websocket_urlpatterns`` for channels consumers."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, path

from lab import views

urlpatterns = [
    path("", views.home, name="home"),
    path("status/zookeeper/", views.zookeeper_status_card, name="zookeeper-status"),
    path("admin/", admin.site.urls),
]

# Consumers go here, e.g. path("ws/labs/<slug:name>/", LabConsumer.as_asgi()).
websocket_urlpatterns: list[URLPattern | URLResolver] = []
