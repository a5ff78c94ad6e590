"""Step 3, desired: validated CRs -> the whole desired state (objects, zone placements, RRsets),
and its checks against what the agent lets a repository ask for (policy.py, tenancy.py,
podsecurity.py, overrides.py: errors at file:line that make a revision invalid before anything is
planned). Pure."""
