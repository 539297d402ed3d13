from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "lab.classroom"
    label = "classroom"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Classroom"

    def ready(self) -> None:
        # The live fragments the classroom adds to lab pages (exercise checks, scenario player, demo banner).
        from lab.classroom.attach import register_fragments

        register_fragments()
