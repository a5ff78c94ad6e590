"""Step 5, gate: the refusals of a plan (safety, zone transfers), decided on the whole plan before
any write (verdict.py). Pure. What a revision may ask for is checked earlier, on the desired state
(agent/desired/policy.py, tenancy.py, podsecurity.py, overrides.py): its violations make the
revision invalid."""
