"""The one orchestrator that runs a revision, and what decides when: the agent (agent.py), webhook,
settings, lease."""
