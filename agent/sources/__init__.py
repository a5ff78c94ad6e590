"""Where revisions come from: a Git remote, or a local directory (dry runs)."""
