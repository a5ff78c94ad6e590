"""Step 3, desired: validated CRs -> the whole desired state (objects, zone placements, RRsets).
Pure."""
