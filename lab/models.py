"""The lab's rows: one ``Lab`` per live cluster a person owns."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Lab(models.Model):
    """A lab: its cluster's shape and settings, where its data lives, and whose it is.

    ``settings`` holds the runtime's ``LabSpec.settings()``: broker config overrides, the
    clock rate, the seed, and the topics and simulated clients a person added, so the lab
    comes back after a restart with its data (same data directory and ZooKeeper chroot).
    """

    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=60, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="labs")
    brokers = models.PositiveSmallIntegerField(default=3)
    settings = models.JSONField(default=dict, blank=True)
    # The version of the spec ``settings`` holds (``LiveLab.versioned_spec``): a save of an older one,
    # arriving after, is dropped.
    spec_version = models.BigIntegerField(default=0)
    data_dir = models.CharField(max_length=500)
    zookeeper_chroot = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("lab", kwargs={"slug": self.slug})

    def spec_settings(self) -> dict[str, Any]:
        return dict(self.settings or {})


class LabPort(models.Model):
    """One broker's Kafka listener port, the lab's for as long as the lab exists (``lab.ports``).

    The database keeps two labs off one port: ``port`` is unique across the server, so of two
    makers that picked the same one, the second's insert fails instead of both listening there.
    Deleting the lab deletes its rows, and the ports are free for the next lab.
    """

    lab = models.ForeignKey(Lab, on_delete=models.CASCADE, related_name="ports")
    broker = models.PositiveSmallIntegerField()
    port = models.PositiveIntegerField(unique=True)
    # Kafka's security protocol of the listener: PLAINTEXT, or SASL_PLAINTEXT, SSL, SASL_SSL.
    listener = models.CharField(max_length=16, default="PLAINTEXT")

    class Meta:
        ordering = ("lab", "listener", "broker")
        constraints = [
            models.UniqueConstraint(fields=("lab", "broker", "listener"), name="one_port_per_broker_listener")
        ]

    def __str__(self) -> str:
        return f"{self.lab.slug} broker {self.broker} {self.listener}: {self.port}"
