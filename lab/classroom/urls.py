"""The classroom's URLs (included at the site's root by lab/urls.py)."""

from django.urls import path

from lab.classroom import views

app_name = "classroom"

urlpatterns = [
    path("exercises/", views.exercise_list, name="exercises"),
    path("exercises/<slug:exercise>/", views.exercise_page, name="exercise"),
    path("exercises/<slug:exercise>/start/", views.exercise_start, name="exercise-start"),
    path("exercises/<slug:exercise>/restart/", views.exercise_restart, name="exercise-restart"),
    path("exercises/<slug:exercise>/answer/<int:question>/", views.exercise_answer, name="exercise-answer"),
    path("scenarios/", views.scenario_list, name="scenarios"),
    path("scenarios/<slug:scenario>/open/", views.scenario_open, name="scenario-open"),
    path("classroom/", views.class_progress, name="class"),
    path("classroom/labs/<slug:slug>/demo/", views.demo_start, name="demo-start"),
    path("classroom/labs/<slug:slug>/demo/end/", views.demo_end, name="demo-end"),
    path("classroom/labs/<slug:slug>/demo/copy/", views.demo_copy, name="demo-copy"),
    path("classroom/labs/<slug:slug>/demo/viewers/", views.demo_viewers, name="demo-viewers"),
    path(
        "classroom/labs/<slug:slug>/scenario/<slug:action>/", views.scenario_control, name="scenario-control"
    ),
    path("demos/join/", views.demo_join, name="demo-join"),
    path("demos/<str:code>/leave/", views.demo_leave, name="demo-leave"),
    path("demos/<str:code>/copy/", views.demo_my_copy, name="demo-my-copy"),
]
