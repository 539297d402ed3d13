"""Pure functions from engine snapshots and events to view models for the templates."""
