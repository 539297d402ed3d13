from django.contrib import admin

from lab.admin_site import InstructorsMay
from lab.classroom.models import Demo, DemoCopy, DemoViewer, ExerciseDefinition, ExerciseProgress, ScenarioLab


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


@admin.register(ExerciseDefinition)
class ExerciseDefinitionAdmin(InstructorsMay):
    list_display = ("slug", "enabled", "updated")
    list_filter = ("enabled",)
    search_fields = ("slug", "source")
    actions = ("copy_shipped",)

    def changelist_view(self, request, extra_context=None):  # type: ignore[no-untyped-def]
        # The copy action needs no selection (there may be no rows yet): run it across the table.
        if request.method == "POST" and request.POST.get("action") == "copy_shipped":
            post = request.POST.copy()
            post["select_across"] = "1"
            post.setlist(
                admin.helpers.ACTION_CHECKBOX_NAME, post.getlist(admin.helpers.ACTION_CHECKBOX_NAME) or ["0"]
            )
            request.POST = post
        return super().changelist_view(request, extra_context)

    @admin.action(description="Copy the shipped exercises here, to edit them (existing rows are kept)")
    def copy_shipped(self, request, queryset):  # type: ignore[no-untyped-def]
        from lab.classroom import content

        made = 0
        for path in sorted(content.exercises_dir().glob("*.yaml")):
            from lab.exercises.format import load

            slug = load(path).slug
            _, created = ExerciseDefinition.objects.get_or_create(
                slug=slug, defaults={"source": path.read_text()}
            )
            made += created
        self.message_user(request, f"{made} shipped exercise(s) copied.")
