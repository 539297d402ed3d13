from django.apps import AppConfig


class ClassroomConfig(AppConfig):
    name = "lab.classroom"
    label = "classroom"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Classroom"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from lab.classroom import commands, content
        from lab.classroom.attach import register_fragments
        from lab.classroom.models import ExerciseDefinition

        # What the classroom asks of a lab: named commands (lab.runtime.actions), registered once.
        assert commands.COMMANDS

        # The live fragments the classroom adds to lab pages (exercise checks, scenario player, demo banner).
        register_fragments()

        # Exercises edited in the admin are read again after a save or a delete.
        def changed(**_: object) -> None:
            content.definitions_changed()

        post_save.connect(changed, sender=ExerciseDefinition, weak=False)
        post_delete.connect(changed, sender=ExerciseDefinition, weak=False)
