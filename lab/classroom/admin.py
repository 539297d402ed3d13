from django.contrib import admin

from lab.classroom.models import Demo, DemoCopy, DemoViewer, ExerciseProgress, ScenarioLab


@admin.register(Demo)
class DemoAdmin(admin.ModelAdmin):
    list_display = ("lab", "join_code", "active", "created")


@admin.register(DemoViewer)
class DemoViewerAdmin(admin.ModelAdmin):
    list_display = ("demo", "user", "joined")


@admin.register(ExerciseProgress)
class ExerciseProgressAdmin(admin.ModelAdmin):
    list_display = ("user", "exercise", "lab", "started", "completed")
    list_filter = ("exercise",)
    search_fields = ("user__username", "exercise")


@admin.register(DemoCopy)
class DemoCopyAdmin(admin.ModelAdmin):
    list_display = ("demo", "user", "lab", "created", "error")


@admin.register(ScenarioLab)
class ScenarioLabAdmin(admin.ModelAdmin):
    list_display = ("lab", "scenario", "created")
