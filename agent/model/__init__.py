"""Pydantic models of Bindy's CRs (`bindy.firestoned.io/v1beta1`). Pure data: no I/O here."""
