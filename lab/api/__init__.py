"""The REST API (django-ninja) at /api/: labs, topics, records, groups, faults, the clock, the journal, scenarios."""
