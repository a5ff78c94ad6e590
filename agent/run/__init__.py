"""The one orchestrator that runs a revision, and what decides when: scheduler, webhook, settings, lease."""
