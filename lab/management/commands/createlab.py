"""``python manage.py createlab NAME --owner USER [--brokers 3] [--config k=v ...] [--topic t:P:RF ...]``.

Makes a lab row for an instructor or a script (the home page's form does the same for
one person); the lab starts when the server does, or when someone opens it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.engine.errors import KafkaError
from lab.labs import create_lab
from lab.runtime.spec import TopicSpec


def parse_topic(text: str) -> TopicSpec:
    """``orders:3:3`` (name, partitions, replication factor); partitions and RF default to 1."""
    name, *numbers = text.split(":")
    if not name or len(numbers) > 2:
        raise CommandError(f"--topic takes name[:partitions[:replication_factor]], not {text!r}")
    try:
        values = [int(n) for n in numbers]
    except ValueError:
        raise CommandError(f"--topic takes whole numbers after the name, not {text!r}") from None
    partitions = values[0] if values else 1
    rf = values[1] if len(values) > 1 else 1
    return TopicSpec(name=name, partitions=partitions, replication_factor=rf)


class Command(BaseCommand):
    help = "Create a lab (a cluster someone owns) with broker configs and topics."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--owner", required=True, help="user name of the lab's owner")
        parser.add_argument("--brokers", type=int, default=3)
        parser.add_argument(
            "--config", action="append", default=[], metavar="KEY=VALUE", help="a broker config"
        )
        parser.add_argument(
            "--topic", action="append", default=[], metavar="NAME:P:RF", help="a topic to create"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = get_user_model().objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"there is no user {options['owner']!r}")
        config: dict[str, object] = {}
        for item in options["config"]:
            key, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--config takes KEY=VALUE, not {item!r}")
            config[key.strip()] = value.strip()
        topics = [parse_topic(t) for t in options["topic"]]
        try:
            lab = create_lab(owner, options["name"], brokers=options["brokers"], config=config, topics=topics)
        except KafkaError as error:
            raise CommandError(f"{error.name}: {error.message}") from None
        self.stdout.write(f"Lab {lab.name!r} created: /labs/{lab.slug}/ (owner {owner.get_username()})")
