"""The panel's addresses, under ``labs/<slug>/admin/`` (lab/urls.py includes them)."""

from django.urls import path

from lab.adminpanel import views_acls, views_groups, views_messages, views_topics, views_users

app_name = "adminpanel"

urlpatterns = [
    path("", views_topics.topics, name="topics"),
    path("table/", views_topics.topics_table, name="topics-table"),
    path("create/", views_topics.create, name="create"),
    path("elect/", views_topics.elect_all, name="elect-all"),
    path("topics/<str:topic>/", views_topics.topic, name="topic"),
    path("topics/<str:topic>/partitions/", views_topics.topic_partitions, name="topic-partitions"),
    path("topics/<str:topic>/config/", views_topics.config, name="topic-config"),
    path("topics/<str:topic>/grow/", views_topics.grow, name="topic-grow"),
    path("topics/<str:topic>/reassign/", views_topics.reassign, name="topic-reassign"),
    path("topics/<str:topic>/elect/", views_topics.elect, name="topic-elect"),
    path("topics/<str:topic>/delete/", views_topics.delete, name="topic-delete"),
    path("topics/<str:topic>/acls/", views_acls.acls, name="acls"),
    path("topics/<str:topic>/acls/add/", views_acls.add, name="acl-add"),
    path("topics/<str:topic>/acls/delete/", views_acls.delete, name="acl-delete"),
    path("topics/<str:topic>/messages/", views_messages.messages, name="messages"),
    path("topics/<str:topic>/messages/records/", views_messages.records, name="records"),
    path("topics/<str:topic>/messages/export.<str:fmt>", views_messages.export_records, name="export"),
    path("topics/<str:topic>/produce/", views_messages.produce, name="produce"),
    path("groups/", views_groups.groups, name="groups"),
    path("groups/list/", views_groups.groups_list, name="groups-list"),
    path("groups/reset/", views_groups.reset, name="group-reset"),
    path("users/", views_users.users, name="users"),
    path("users/list/", views_users.users_list, name="users-list"),
    path("users/create/", views_users.create, name="user-create"),
    path("users/delete/", views_users.delete, name="user-delete"),
]
