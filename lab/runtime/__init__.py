"""Live labs: one driver per running cluster, wall time, command inbox, channel-layer pushes."""
