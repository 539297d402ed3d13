"""The commands of pages and the API beside the dashboard's controls, by family, registered by name.

Each module registers its commands with ``lab.runtime.actions.register`` (``register_read`` for a
read): JSON arguments checked where the request arrives, an answer of JSON values. The API and the
topic admin ask for the same commands, so a topic created by a script and by a click are one thing.
"""

from lab.runtime.commands import acls, groups, reads, records, topics, transactions, users

__all__ = ["acls", "groups", "reads", "records", "topics", "transactions", "users"]
