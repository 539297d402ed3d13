"""A demo is an instructor's lab that students join with a code and watch; progress is per student and exercise."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from lab.models import Lab

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud in class


def new_join_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(6))


class Demo(models.Model):
    lab = models.OneToOneField(Lab, on_delete=models.CASCADE, related_name="demo")
    join_code = models.CharField(max_length=12, unique=True, default=new_join_code)
    active = models.BooleanField(default=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"demo {self.lab} ({self.join_code})"


class DemoViewer(models.Model):
    demo = models.ForeignKey(Demo, on_delete=models.CASCADE, related_name="viewers")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="demos_joined")
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["demo", "user"], name="one_join_per_demo")]

    def __str__(self) -> str:
        return f"{self.user} watches {self.demo}"


class ExerciseProgress(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exercise_progress"
    )
    exercise = models.SlugField(max_length=100)
    lab = models.ForeignKey(Lab, on_delete=models.SET_NULL, null=True, blank=True)
    answers = models.JSONField(default=dict, blank=True)  # question index -> chosen index
    checks = models.JSONField(default=dict, blank=True)  # check index -> when it passed (ISO time)
    # The lab's snapshot when the setup finished, for checks about change ("the controller moved");
    # empty while the setup plays.
    start = models.JSONField(default=dict, blank=True)
    started = models.DateTimeField(auto_now_add=True)
    completed = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "exercise"], name="one_progress_per_exercise")]

    def __str__(self) -> str:
        return f"{self.user} / {self.exercise}"


class DemoCopy(models.Model):
    """A student's own lab, copied from a demo's state when the instructor handed copies out."""

    demo = models.ForeignKey(Demo, on_delete=models.CASCADE, related_name="copies")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="demo_copies")
    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="copied_from")
    created = models.DateTimeField(auto_now_add=True)
    error = models.TextField(blank=True)  # why the copy is incomplete, if it is

    class Meta:
        ordering = ("-created",)

    def __str__(self) -> str:
        return f"{self.user}'s copy of {self.demo}"


class ScenarioLab(models.Model):
    """A lab opened from a scenario: its page carries the scenario player."""

    lab = models.OneToOneField(Lab, on_delete=models.CASCADE, related_name="scenario")
    scenario = models.SlugField(max_length=100)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.lab} plays {self.scenario}"


class ExerciseDefinition(models.Model):
    """An exercise managed in the Django admin: the same YAML as fixtures/exercises.

    A row with a shipped exercise's slug replaces it; a disabled row hides it. The admin checks the
    YAML on save and names what is wrong, so a broken exercise never reaches a student.
    """

    slug = models.SlugField(max_length=100, unique=True)
    source = models.TextField(help_text="The exercise, in the YAML format of fixtures/exercises/*.yaml.")
    enabled = models.BooleanField(
        default=True, help_text="Shown to students; off hides it (a shipped one too)."
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        from lab.exercises.format import ExerciseError, parse

        if not self.enabled and not self.source.strip():
            return
        try:
            parse(self.source, source=f"exercise {self.slug}", slug=self.slug)
        except (ExerciseError, ValueError) as error:
            raise ValidationError({"source": str(error)}) from None
