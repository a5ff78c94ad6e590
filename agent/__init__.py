"""bindy-agent: a GitOps agent for Bindy DNS custom resources.

Data flows one way: sources -> loader -> desired -> plan -> reconcile -> status and report.
"""

__version__ = "0.1.0"
